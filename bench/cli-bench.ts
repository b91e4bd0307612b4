// `npm run bench:cli -- [--rounds N] [--no-run] [--root DIR] [--out NAME]`: the CLI's own cost only (start-up per command, and one probe's
// whole run against the bare tool), without the per-backend and whole-suite rows of bench.ts. Writes
// bench/cli-results.json and bench/cli-results.md.
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliTimes, type CliTimes } from './cli-times.js';
import { oneProbeRunTimes, type OneProbeRun } from './cli-run-times.js';
import { describeMachine, load, machine } from './machine.js';
import type { Summary } from './stats.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// --root DIR: another built checkout (e.g. an earlier commit) measured the same way; results still go to bench/.
const rootAt = args.indexOf('--root');
const root = rootAt >= 0 ? resolve(args[rootAt + 1] ?? '.') : join(benchDir, '..');
const roundsAt = args.indexOf('--rounds');
const rounds = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 10;
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds needs a positive integer');

const fmt = (s: Summary): string => (s.n === 0 ? '–' : `${Math.round(s.median)} (${Math.round(s.min)}–${Math.round(s.max)}), n=${s.n}`);
const ld = (xs: readonly number[]): string => xs.map((x) => x.toFixed(2)).join(' / ');

const m = machine();
const startLoad = load();
process.stderr.write(`sandcheck CLI bench: ${describeMachine(m)}; load ${ld(startLoad)}; ${rounds} rounds\n`);
const run: OneProbeRun | { unavailable: string } = args.includes('--no-run') ? { unavailable: '--no-run' } : await oneProbeRunTimes(root, rounds);
const cli: CliTimes | { unavailable: string } = await cliTimes(root, rounds);

const L: string[] = [
  `Checkout: ${root === join(benchDir, '..') ? 'this one' : '--root (another build)'}. Machine: ${describeMachine(m)}. Load (1/5/15 min) at start: ${ld(startLoad)}.`,
  '',
];
if ('unavailable' in run) L.push(`One-probe run: not measured (${run.unavailable})`);
else {
  L.push(
    `| one probe, start to exit | wall ms median (min–max), n | CPU ms median (min–max) | load 1/5/15 before → after |`,
    '|---|---|---|---|',
    `| \`${run.command}\` (verdict ${run.verdicts.join(', ')}) | ${fmt(run.cli)} | ${fmt(run.cliCpu)} | ${ld(run.load.before)} → ${ld(run.load.after)} |`,
    `| raw: \`${run.rawTool}\` (fresh directories) | ${fmt(run.raw)} | ${fmt(run.rawCpu)} | |`,
    `| CLI / raw, paired rounds | ${run.ratio.n === 0 ? '–' : `${run.ratio.median.toFixed(1)}× (${run.ratio.min.toFixed(1)}–${run.ratio.max.toFixed(1)})`} | | |`,
  );
  if (run.problems.length > 0) L.push('', ...run.problems.map((p) => `- problem: ${p}`));
}
L.push('');
if ('unavailable' in cli) L.push(`Start-up: not measured (${cli.unavailable})`);
else {
  L.push(`| start-up | wall ms median (min–max), n | CPU ms median (min–max) | load 1/5/15 before → after |`, '|---|---|---|---|');
  for (const row of cli.rows)
    L.push(
      `| \`${row.command}\` | ${fmt(row.wallMs)}${row.problems.length ? ` (${row.problems.join('; ')})` : ''} | ${fmt(row.cpuMs)} | ${ld(cli.load.before)} → ${ld(cli.load.after)} |`,
    );
}
L.push('');
const outAt = args.indexOf('--out');
const name = outAt >= 0 ? (args[outAt + 1] ?? 'cli-results') : 'cli-results';
await writeFile(join(benchDir, `${name}.json`), `${JSON.stringify({ machine: m, load: startLoad, rounds, run, cli }, null, 2)}\n`);
await writeFile(join(benchDir, `${name}.md`), L.join('\n'));
process.stdout.write(L.join('\n'));
