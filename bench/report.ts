import { writeFile } from 'node:fs/promises';
import type { CliTimes } from './cli-times.js';
import type { PayloadRow } from './measure-backend.js';
import type { Machine } from './machine.js';
import type { SuiteRow } from './suite-times.js';
import { fmtMs, fmtRatio, type Summary } from './stats.js';

export interface MeasuredBackend {
  name: string;
  available: true;
  description: string;
  /** The bare tool the backend's figures are compared with. */
  rawTool: string;
  /** VmHWM of the bench process while this backend was measured (reset before it), MB. */
  peakRssMb: number | undefined;
  /** The run's one private dockerd (empty network namespace), started for the first docker backend measured. */
  daemon?: { startMs: number; storageDriver: string; startedFor: string };
  rows: PayloadRow[];
}

export type BackendResult = MeasuredBackend | { name: string; available: false; reason: string };

export interface BenchResults {
  schema: 'sandcheck-bench/1';
  at: string;
  machine: Machine;
  /** One line naming the machine; every figure below was measured on it. */
  machineText: string;
  policy: string;
  rounds: number;
  load: { start: number[]; end: number[] };
  backends: BackendResult[];
  cli: CliTimes | { unavailable: string };
  /** Whole-suite runs of the CLI at its default concurrency. */
  suites: SuiteRow[] | { unavailable: string };
  /** Bench process peak RSS over the whole run, MB. */
  peakRssMb: number | undefined;
}

const med = (s: Summary): string => (s.n === 0 ? '–' : `${Math.round(s.median)}`);
const rat = (s: Summary): string => (s.n === 0 ? '–' : `${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})`);
const ld = (xs: readonly number[]): string => (xs[0] ?? 0).toFixed(2);

export function markdown(r: BenchResults): string {
  const L: string[] = [];
  L.push(`# sandcheck bench, ${r.at}`, '');
  L.push(`Machine: ${r.machineText}. Policy ${r.policy}, ${r.rounds} rounds per row after one warm-up, raw/adapter/harness interleaved in a rotating order.`);
  L.push(
    `Load average (1/5/15 min): ${r.load.start.join(' / ')} at the start, ${r.load.end.join(' / ')} at the end. Timings are medians (min–max) in ms; ratios are medians of paired rounds.`,
    '',
  );
  L.push(
    '| backend | payload | raw tool | adapter loop | harness (Runner) | adapter ÷ raw | harness ÷ raw | harness ÷ adapter | harness CPU/exec | adapter CPU/exec | peak RSS MB | load 1-min |',
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const b of r.backends) {
    if (!b.available) continue;
    for (const row of b.rows) {
      L.push(
        `| ${b.name} | ${row.payload} | ${med(row.wallMs.raw)} | ${med(row.wallMs.adapter)} | ${med(row.wallMs.harness)} | ${rat(row.ratio.adapterVsRaw)} | ${rat(row.ratio.harnessVsRaw)} | ${rat(row.ratio.harnessVsAdapter)} | ${med(row.cpuMsPerExec.harness)} ms | ${med(row.cpuMsPerExec.adapter)} ms | ${b.peakRssMb ?? '?'} | ${ld(row.load.before)}→${ld(row.load.after)} |`,
      );
    }
  }
  L.push('', 'Adapter loop by phase (median ms): create / put / exec / destroy', '');
  for (const b of r.backends) {
    if (!b.available) continue;
    for (const row of b.rows) {
      const p = row.adapterPhasesMs;
      L.push(`- ${b.name} ${row.payload}: ${med(p.create)} / ${med(p.put)} / ${med(p.exec)} / ${med(p.destroy)}`);
    }
  }
  L.push('', 'Raw tools:', '');
  for (const b of r.backends)
    if (b.available)
      L.push(
        `- ${b.name}: \`${b.rawTool}\`${b.daemon ? ` (private dockerd, ${b.daemon.storageDriver}, ready in ${Math.round(b.daemon.startMs)} ms${b.daemon.startedFor !== b.name ? `, the same daemon as ${b.daemon.startedFor}` : ''})` : ''}`,
      );
  const gone = r.backends.filter((b) => !b.available);
  if (gone.length > 0) {
    L.push('', 'Not measured:', '');
    for (const b of gone) if (!b.available) L.push(`- ${b.name}: ${b.reason}`);
  }
  const problems = r.backends.flatMap((b) => (b.available ? b.rows.flatMap((row) => row.problems.map((p) => `${b.name} ${row.payload}: ${p}`)) : []));
  if (problems.length > 0) L.push('', 'Problems seen (figures of such rounds are still counted):', '', ...problems.map((p) => `- ${p}`));
  L.push('');
  if ('unavailable' in r.cli) L.push(`CLI: not measured (${r.cli.unavailable})`);
  else {
    L.push(`| CLI command | wall ms median (min–max), n | load 1-min |`, '|---|---|---|');
    for (const row of r.cli.rows)
      L.push(
        `| \`${row.command}\` | ${fmtMs(row.wallMs)}${row.problems.length ? ` (${row.problems.join('; ')})` : ''} | ${ld(r.cli.load.before)}→${ld(r.cli.load.after)} |`,
      );
  }
  L.push('', ...suiteMarkdown(r.suites));
  L.push('', `Bench process peak RSS (VmHWM) over the whole run: ${r.peakRssMb ?? '?'} MB.`, '');
  return L.join('\n');
}

const sec = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const verdictText = (v: Record<string, number>): string =>
  Object.entries(v)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');

/** The whole-suite table: wall against the least the schedule allows, and the harness's own peak RSS. */
export function suiteMarkdown(suites: BenchResults['suites']): string[] {
  if ('unavailable' in suites) return [`Whole suites: not measured (${suites.unavailable})`];
  const L = [
    '| suite (`sandcheck run --policy ci`, default -j) | slots (all/cpu/wait) | results | run wall | critical path | wall ÷ critical | longest result | harness peak RSS MB | exit | load 1-min |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of suites) {
    const what = `${s.backend} ${s.label}`;
    L.push(
      `| ${what} | ${s.slots.limit}/${s.slots.cpu}/${s.slots.wait} | ${s.results} (${verdictText(s.verdicts)}) | ${sec(s.runMs)} (process ${sec(s.processMs)}) | ${sec(s.criticalMs)} | ${s.ratio.toFixed(2)}× | ${s.longest.id} ${sec(s.longest.ms)} | ${s.peakRssMb ?? '?'} | ${s.exitCode ?? '?'} | ${ld(s.load.before)}→${ld(s.load.after)} |`,
    );
  }
  L.push(
    '',
    "Critical path: the least wall time the schedule allows for the results' own durations (network probes one after another, with nothing beside them; the rest no less than the longest of them, their CPU-bound work over the CPU slots, and all their work over every slot). Run wall is the scorecard's own span (lab set-up to teardown).",
  );
  const problems = suites.flatMap((s) => s.problems.map((p) => `- ${s.backend} ${s.label}: ${p}`));
  if (problems.length > 0) L.push('', 'Problems seen:', '', ...problems);
  return L;
}

/** Console lines for one measured backend. */
export function consoleLines(b: MeasuredBackend): string[] {
  const out = [`${b.name}: raw tool = ${b.rawTool}`];
  for (const row of b.rows) {
    out.push(
      `  ${row.payload}: raw ${fmtMs(row.wallMs.raw)} | adapter ${fmtMs(row.wallMs.adapter)} | harness ${fmtMs(row.wallMs.harness)}`,
      `    adapter loop vs raw tool ${fmtRatio(row.ratio.adapterVsRaw)}; harness vs raw tool ${fmtRatio(row.ratio.harnessVsRaw)}; harness vs adapter ${fmtRatio(row.ratio.harnessVsAdapter)}`,
      `    harness CPU per box execution ${fmtMs(row.cpuMsPerExec.harness)} (adapter alone ${fmtMs(row.cpuMsPerExec.adapter)}); load ${row.load.before.join('/')} → ${row.load.after.join('/')}`,
      ...row.problems.map((p) => `    problem: ${p}`),
    );
  }
  out.push(`  peak RSS (VmHWM) while measuring ${b.name}: ${b.peakRssMb ?? '?'} MB`);
  return out;
}

export async function writeResults(jsonPath: string, mdPath: string, r: BenchResults): Promise<void> {
  await writeFile(jsonPath, `${JSON.stringify(r, null, 2)}\n`);
  await writeFile(mdPath, markdown(r));
}
