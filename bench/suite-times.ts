import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBackend } from '../backends/registry.js';
import { errorMessage } from '../core/errors.js';
import type { Policy } from '../model/policy.js';
import { isNetworkProbe, probeLoad } from '../harness/probe-cost.js';
import { slotsFor, type Slots } from '../harness/schedule.js';
import { allProbes } from '../suites/index.js';
import { load } from './machine.js';
import { spawnTimed } from './spawn-timed.js';

/** One whole-suite run of the CLI, and the least wall time its own work allows (see `criticalPathMs`). */
export interface SuiteRow {
  label: string;
  backend: string;
  only?: string[];
  exitCode: number | null;
  /** Spawn to exit of the CLI process. */
  processMs: number;
  /** The run's own span (the scorecard's startedAt to finishedAt: lab, probes and teardown). */
  runMs: number;
  results: number;
  verdicts: Record<string, number>;
  /** Sum of every result's durationMs (its work, never its time in the queue). */
  workMs: number;
  longest: { id: string; ms: number };
  slots: Slots;
  criticalMs: number;
  /** runMs ÷ criticalMs. */
  ratio: number;
  /** The scorecard's own peak RSS of the harness (sampled until the reports were written). */
  peakRssMb?: number;
  load: { before: number[]; after: number[] };
  problems: string[];
}

interface CardResult {
  id: string;
  durationMs?: number;
  verdict?: string;
  outcome?: string;
}
interface Card {
  run: { startedAt: string; finishedAt: string; harness?: { maxRssBytes?: number } };
  results: CardResult[];
}

/**
 * The least wall time the runner's schedule allows for these results: network probes run with nothing beside
 * them (their sum), and the rest can at best share the slots: no less than the longest of them, their CPU-bound
 * work over the CPU slots, and all their work over every slot.
 */
export function criticalPathMs(results: readonly { id: string; ms: number }[], slots: Slots): number {
  const byId = new Map(allProbes().map((p) => [p.id, p]));
  let alone = 0;
  let cpu = 0;
  let all = 0;
  let longest = 0;
  for (const r of results) {
    const probe = byId.get(r.id);
    if (probe && isNetworkProbe(probe)) {
      alone += r.ms;
      continue;
    }
    all += r.ms;
    if (!probe || probeLoad(probe) === 'cpu') cpu += r.ms;
    longest = Math.max(longest, r.ms);
  }
  return alone + Math.max(longest, cpu / slots.cpu, all / slots.limit);
}

/** Runs `sandcheck run` once per entry (default concurrency) and reads both scorecards it wrote. */
export async function suiteTimes(
  root: string,
  policy: Policy,
  entries: readonly { label: string; backend: string; only?: string[] }[],
  signal?: AbortSignal,
): Promise<SuiteRow[] | { unavailable: string }> {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) return { unavailable: `${main} is missing: build first (npx tsc -p tsconfig.build.json)` };
  const rows: SuiteRow[] = [];
  for (const e of entries) {
    if (signal?.aborted) break;
    const out = await mkdtemp(join(tmpdir(), 'sandcheck-bench-suite-'));
    try {
      const lightBoxes = await loadBackend(e.backend)
        .then((b) => b.capabilities(policy).lightBoxes === true)
        .catch(() => false);
      const slots = slotsFor(undefined, availableParallelism(), lightBoxes);
      const before = load();
      const argv = [
        process.execPath,
        '--max-semi-space-size=1',
        main,
        'run',
        '--backend',
        e.backend,
        '--policy',
        policy.name,
        '--out',
        out,
        ...(e.only ? ['--only', ...e.only] : []),
      ];
      const r = await spawnTimed(argv, {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', NO_COLOR: '1' },
        cwd: root,
        timeoutMs: 900_000,
        ...(signal ? { signal } : {}),
      });
      const after = load();
      const problems: string[] = [];
      // 0 all held, 1 a crossing, 2 inconclusive: the run itself worked; anything else is a harness or usage failure.
      if (r.exitCode === null || r.exitCode > 2) problems.push(`exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n').slice(-2).join(' ')}`);
      const cards = await Promise.all(
        ['security.json', 'task.json'].map((f) =>
          readFile(join(out, f), 'utf8')
            .then((t) => JSON.parse(t) as Card)
            .catch(() => undefined),
        ),
      );
      const [security] = cards;
      if (!security) problems.push('no security.json was written');
      const results = cards.flatMap((c) => c?.results ?? []);
      const timed = results.map((x) => ({ id: x.id, ms: x.durationMs ?? 0 }));
      // Security verdicts by name; a task counts by whether its outcome was the expected one.
      const verdicts: Record<string, number> = {};
      const tasks = new Set((cards[1]?.results ?? []).map((x) => x.id));
      for (const x of results) {
        const v = tasks.has(x.id) ? `task ${x.outcome ?? '?'}` : (x.verdict ?? '?');
        verdicts[v] = (verdicts[v] ?? 0) + 1;
      }
      const longest = timed.reduce((a, b) => (b.ms > a.ms ? b : a), { id: '', ms: 0 });
      const runMs = security ? Date.parse(security.run.finishedAt) - Date.parse(security.run.startedAt) : 0;
      const criticalMs = criticalPathMs(timed, slots);
      const rss = security?.run.harness?.maxRssBytes;
      rows.push({
        label: e.label,
        backend: e.backend,
        ...(e.only ? { only: e.only } : {}),
        exitCode: r.exitCode,
        processMs: r.ms,
        runMs,
        results: results.length,
        verdicts,
        workMs: timed.reduce((a, b) => a + b.ms, 0),
        longest,
        slots,
        criticalMs,
        ratio: criticalMs > 0 ? runMs / criticalMs : 0,
        ...(rss !== undefined ? { peakRssMb: Math.round(rss / 2 ** 20) } : {}),
        load: { before, after },
        problems,
      });
    } catch (err) {
      return { unavailable: `${e.label}: ${errorMessage(err)}` };
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }
  return rows;
}
