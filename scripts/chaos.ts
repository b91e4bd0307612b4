/**
 * Chaos check of crash recovery: real runs signalled (INT, TERM, KILL; the harness alone or its whole process
 * group, as Ctrl-C does) at seeded random moments, each followed by the next run into the same --out. After every
 * trial nothing of the signalled run may be left, by its ownership journal and by a host snapshot, and every
 * report must be valid (possibly incomplete).
 *
 *   npx tsx scripts/chaos.ts --trials 20 --seed 1 [--docker | --backend docker-hardened] [--json]
 *
 * Needs root, bubblewrap and the built CLI (`npx tsc -p tsconfig.build.json`). Touches only what its own runs made.
 * Its runs keep their ownership journals in a private directory (SANDCHECK_OWNERSHIP_DIR), so only its own next run
 * recovers a dead run's journal, and its runs recover no other run's journal.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageRoot } from '../core/paths.js';
import { defaultJournalDir } from '../core/ownership-journal.js';
import { hostLeftovers, journalLeftovers } from './chaos-snapshot.js';
import { CHAOS_PREFIX, journalsIn, markChaosOwner, sweepStaleChaos } from './chaos-stale.js';
import { defaultSweepHooks } from '../harness/ownership/sweep-hooks.js';
import { validateScorecard } from '../reports/validate.js';

const CLI = join(packageRoot(), 'dist', 'cli', 'main.js');
const PROBES = ['identity-uid', 'wall-clock-sleep', 'metadata-ipv4', 'fork-bomb', 'average-correct'];
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL'] as const;
type Sig = (typeof SIGNALS)[number];

/** mulberry32: a small PRNG, so a seed replays the same moments. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/** The run id of the harness with this pid, from its ownership journal (polled while it runs). */
function runIdOf(pid: number): string | undefined {
  const dir = defaultJournalDir();
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    try {
      const first = readFileSync(join(dir, name), 'utf8').split('\n')[0] ?? '';
      const owner = JSON.parse(first) as { pid?: number; runId?: string };
      if (owner.pid === pid && typeof owner.runId === 'string') return owner.runId;
    } catch {
      // torn or foreign
    }
  }
  return undefined;
}

/** The run id an interrupted or finished run wrote into its security card, if it wrote one. */
function runIdOfCard(dir: string): string | undefined {
  try {
    const card = JSON.parse(readFileSync(join(dir, 'security.json'), 'utf8')) as { run?: { id?: unknown } };
    return typeof card.run?.id === 'string' ? card.run.id : undefined;
  } catch {
    return undefined;
  }
}

function cardProblems(dir: string, label: string): string[] {
  const out: string[] = [];
  for (const kind of ['security', 'task'] as const) {
    const path = join(dir, `${kind}.json`);
    if (!existsSync(path)) {
      out.push(`${label}: ${kind}.json missing`);
      continue;
    }
    const check = validateScorecard(kind, JSON.parse(readFileSync(path, 'utf8')));
    if (!check.valid) out.push(`${label}: ${kind}.json invalid: ${check.errors.slice(0, 200)}`);
  }
  return out;
}

function completeCards(dir: string): boolean {
  if (cardProblems(dir, 'run').length > 0) return false;
  const card = JSON.parse(readFileSync(join(dir, 'security.json'), 'utf8')) as { run?: { incomplete?: boolean } };
  return card.run?.incomplete === false;
}

interface Trial {
  n: number;
  /** ended: the run finished, was interrupted or killed; before-start: it died before recording anything. */
  outcome?: 'before-start' | 'ran';
  backend: string;
  signal: Sig;
  target: 'process' | 'group';
  delayMs: number;
  runId?: string;
  exit: number | null;
  problems: string[];
}

async function runCli(
  args: string[],
  timeoutMs: number,
  onSpawn?: (pid: number) => void,
): Promise<{ code: number | null; signal: string | null; pid: number }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'ignore'], detached: true, env: { ...process.env, CI: 'true' } });
  const pid = child.pid ?? -1;
  onSpawn?.(pid);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  return { code, signal, pid };
}

async function trial(n: number, backend: string, rand: () => number, root: string): Promise<Trial> {
  const signal = SIGNALS[Math.floor(rand() * SIGNALS.length)] ?? 'SIGKILL';
  const target = rand() < 0.5 ? 'process' : 'group';
  const delayMs = Math.floor(rand() * (backend === 'bwrap' ? 9000 : 25_000));
  const out = join(root, `trial-${n}`);
  const t: Trial = { n, backend, signal, target, delayMs, exit: null, problems: [] };
  let pid = -1;
  let runId: string | undefined;
  const first = runCli(['run', '--backend', backend, '--policy', 'ci', '--only', ...PROBES, '--out', out], 180_000, (p) => (pid = p));
  const started = Date.now();
  let exited = false;
  void first.then(() => (exited = true));
  while (!exited && Date.now() - started < delayMs) {
    runId ??= runIdOf(pid);
    await sleep(50);
  }
  runId ??= runIdOf(pid);
  if (!exited) {
    try {
      process.kill(target === 'group' ? -pid : pid, signal);
    } catch {
      // it just ended
    }
  }
  const r = await first;
  // A run interrupted right after it began can open and close its journal between two polls; its card names it.
  runId ??= runIdOfCard(out);
  t.exit = r.code;
  if (runId) t.runId = runId;
  t.outcome = runId === undefined && r.signal === signal ? 'before-start' : 'ran';
  // A signal in the last moments, after the reports were written and the handlers removed, ends the process by
  // its default action: the run itself had finished (complete, valid reports, no journal left).
  const finishedBeforeSignal = r.signal === signal && runId !== undefined && !existsSync(join(out, 'run-journal.jsonl')) && completeCards(out);
  const finishedFirst = (r.code !== null && [0, 1, 2].includes(r.code)) || finishedBeforeSignal;
  // Before its handlers exist (module loading, the first few hundred ms) the harness dies by the signal's default
  // action; it has recorded nothing then, which the checks below hold it to.
  const beforeStart = runId === undefined && r.signal === signal;
  if (signal !== 'SIGKILL' && !finishedFirst && !beforeStart && r.code !== 130) t.problems.push(`${signal}: exit ${r.code ?? r.signal}, expected 130`);
  if (beforeStart && existsSync(join(out, 'run-journal.jsonl'))) t.problems.push('died before start, yet a run journal exists');
  if (signal !== 'SIGKILL' && r.code === 130) {
    t.problems.push(...cardProblems(out, 'interrupted run'));
    const card = existsSync(join(out, 'security.json'))
      ? (JSON.parse(readFileSync(join(out, 'security.json'), 'utf8')) as { run?: { interrupted?: boolean } })
      : undefined;
    if (card && card.run?.interrupted !== true) t.problems.push('interrupted run: security.json not marked interrupted');
  }
  if (r.signal === 'SIGKILL' && signal !== 'SIGKILL') t.problems.push('hung: killed by the chaos timeout');
  // The next run into the same directory: it sweeps what the dead run left and recovers its journal.
  const next = await runCli(['run', '--backend', backend, '--policy', 'ci', '--only', 'identity-uid', '--out', out], 180_000);
  if (next.code === null || ![0, 1, 2].includes(next.code)) t.problems.push(`next run: exit ${next.code ?? next.signal}`);
  t.problems.push(...cardProblems(out, 'next run'));
  if (runId && existsSync(join(out, `incomplete-${runId}`))) t.problems.push(...cardProblems(join(out, `incomplete-${runId}`), 'recovered run'));
  if (runId) t.problems.push(...journalLeftovers(runId), ...hostLeftovers(runId));
  else if (!beforeStart) t.problems.push('run id never seen in the ownership journal');
  return t;
}

async function main(): Promise<number> {
  const trials = Number(arg('trials', '4'));
  const seed = Number(arg('seed', '1'));
  const only = arg('backend', '');
  const backends = only !== '' ? [only] : process.argv.includes('--docker') ? ['bwrap', 'docker-hardened'] : ['bwrap'];
  if (!existsSync(CLI)) {
    process.stderr.write(`chaos: ${CLI} is missing: build first (npx tsc -p tsconfig.build.json)\n`);
    return 3;
  }
  const rand = prng(seed);
  // A chaos script killed mid-trial (a CI stopped) left its private journals where nothing else looks: swept first.
  const stale = await sweepStaleChaos(tmpdir(), defaultSweepHooks());
  for (const line of stale.removed) process.stderr.write(`chaos: removed what a killed chaos run left: ${line}\n`);
  for (const line of stale.kept) process.stderr.write(`chaos: could not remove what a killed chaos run left: ${line}\n`);
  const root = await mkdtemp(join(tmpdir(), CHAOS_PREFIX));
  markChaosOwner(root);
  // mkdtemp makes it 0700: a journal directory the sweep trusts. The children inherit it, and so do this
  // process's own journal reads (runIdOf, journalLeftovers).
  const journals = await mkdtemp(join(tmpdir(), `${CHAOS_PREFIX}owners-`));
  markChaosOwner(journals);
  process.env['SANDCHECK_OWNERSHIP_DIR'] = journals;
  const results: Trial[] = [];
  let journalsLeft: string[] = [];
  try {
    for (const backend of backends) {
      for (let n = 1; n <= trials; n++) {
        const t = await trial(n, backend, rand, root);
        results.push(t);
        if (!process.argv.includes('--json')) {
          process.stdout.write(
            `${backend} #${n} ${t.signal}→${t.target} at ${t.delayMs} ms: exit ${t.exit ?? 'killed'}${t.problems.length ? `; ${t.problems.length} problem(s): ${t.problems.join('; ')}` : '; clean'}\n`,
          );
        }
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
    // Every run, dead or finished, must have had its journal closed or recovered by now: a journal here is a leftover.
    journalsLeft = journalsIn(journals);
    if (journalsLeft.length === 0) await rm(journals, { recursive: true, force: true });
  }
  const summary = {
    seed,
    trials: results.length,
    bySignal: Object.fromEntries(SIGNALS.map((s) => [s, results.filter((r) => r.signal === s).length])),
    clean: results.filter((r) => r.problems.length === 0).length,
    diedBeforeStart: results.filter((r) => r.outcome === 'before-start').length,
    exits: results.reduce<Record<string, number>>((acc, r) => ((acc[String(r.exit ?? 'signal')] = (acc[String(r.exit ?? 'signal')] ?? 0) + 1), acc), {}),
    failed: results.filter((r) => r.problems.length > 0).map((r) => ({ n: r.n, backend: r.backend, signal: r.signal, problems: r.problems })),
    journalsLeft,
  };
  process.stdout.write(`${JSON.stringify(summary, null, process.argv.includes('--json') ? 0 : 2)}\n`);
  return summary.failed.length === 0 && journalsLeft.length === 0 ? 0 : 1;
}

process.exitCode = await main();
