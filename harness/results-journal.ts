import { appendFileSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { SandcheckError } from '../core/errors.js';
import type { AnyResult } from '../model/events.js';
import { PolicySchema, type Policy } from '../model/policy.js';
import {
  BackendInfoSchema,
  ID_MAX,
  SecurityResultSchema,
  TaskResultSchema,
  WATCH_DAEMON_MAX,
  WatchedDaemonSchema,
  type SecurityResult,
  type TaskResult,
  type WatchedDaemon,
  type CardFiles,
  type WriteCards,
} from '../model/scorecard.js';
import { processStartTime, readBootIdSync } from '../core/ownership-journal.js';
import { securityScorecard, taskScorecard, type BackendFacts } from './scorecard-builder.js';
import { EnvironmentSchema, type RunEnvironment } from '../model/environment.js';

/** Results are appended here as they come; a finished run removes it, a dead run leaves it for recovery. */
export const RESULTS_JOURNAL = 'run-journal.jsonl';

/** More probes and task cases than any selection holds (the built-in suite and a task folder's 1000 cases). */
const SELECTION_MAX = 10_000;
const Selection = z.array(z.string().max(ID_MAX)).max(SELECTION_MAX);

const StartLine = z.strictObject({
  type: z.literal('start'),
  runId: z.string().max(128),
  pid: z.number().int().positive(),
  startTime: z.number().int().nonnegative(),
  bootId: z.string().max(64),
  startedAt: z.iso.datetime(),
  backend: BackendInfoSchema.omit({ coldStartMs: true }),
  policy: PolicySchema,
  environment: EnvironmentSchema.optional(),
  watchedDaemons: z.array(WatchedDaemonSchema).max(WATCH_DAEMON_MAX).optional(),
  /** The run's probe and task ids in its order: the order its cards list results in. */
  selection: Selection.optional(),
});
const ResultLine = z.discriminatedUnion('kind', [
  z.strictObject({ type: z.literal('result'), kind: z.literal('security'), result: SecurityResultSchema }),
  z.strictObject({ type: z.literal('result'), kind: z.literal('task'), result: TaskResultSchema }),
]);

export interface ResultsJournal {
  readonly path: string;
  /** Synchronous append: a SIGKILL right after still finds the result on disk. */
  append(result: AnyResult): void;
  /** Every result appended so far, in arrival order. */
  collected(): { security: SecurityResult[]; task: TaskResult[] };
  /** The final reports are written: the journal goes. */
  finish(): void;
}

function withoutKind<T extends { kind: string }>(r: T): Omit<T, 'kind'> {
  const { kind: _kind, ...rest } = r;
  return rest;
}

/** Results in the run's order (`selection`, as a finished run's cards list them); ids outside it after, as they came. */
export function inRunOrder<R extends { id: string }>(results: readonly R[], selection: readonly string[] | undefined): R[] {
  if (!selection) return [...results];
  const rank = new Map(selection.map((id, i) => [id, i]));
  return results
    .map((r, i) => ({ r, i }))
    .sort((a, b) => (rank.get(a.r.id) ?? rank.size + a.i) - (rank.get(b.r.id) ?? rank.size + b.i))
    .map(({ r }) => r);
}

export function openResultsJournal(
  outDir: string,
  start: {
    runId: string;
    startedAt: Date;
    backend: BackendFacts;
    policy: Policy;
    environment?: RunEnvironment;
    watchedDaemons?: readonly WatchedDaemon[];
    selection?: readonly string[];
  },
): ResultsJournal {
  const path = join(outDir, RESULTS_JOURNAL);
  const line = {
    type: 'start',
    runId: start.runId,
    pid: process.pid,
    startTime: processStartTime(process.pid) ?? 0,
    bootId: readBootIdSync(),
    startedAt: start.startedAt.toISOString(),
    backend: start.backend,
    policy: start.policy,
    ...(start.environment ? { environment: start.environment } : {}),
    ...(start.watchedDaemons && start.watchedDaemons.length > 0 ? { watchedDaemons: start.watchedDaemons } : {}),
    // Past the bound the start line would not read back at all: the results are then recovered as they came.
    ...(start.selection && Selection.safeParse(start.selection).success ? { selection: start.selection } : {}),
  };
  appendFileSync(path, `${JSON.stringify(line)}\n`, { flag: 'w' });
  const security: SecurityResult[] = [];
  const task: TaskResult[] = [];
  return {
    path,
    append(result) {
      if (result.kind === 'security') security.push(withoutKind(result));
      else task.push(withoutKind(result));
      appendFileSync(path, `${JSON.stringify({ type: 'result', kind: result.kind, result: withoutKind(result) })}\n`);
    },
    collected: () => ({ security: [...security], task: [...task] }),
    finish: () => rmSync(path, { force: true }),
  };
}

export interface RecoveredRun {
  runId: string;
  results: number;
  /** Lines that could not be read back (a torn last line): dropped. */
  dropped: number;
  files: CardFiles;
}

/** The journal left in `outDir` by a run whose process is gone, or undefined when there is none. */
export function hasResultsJournal(outDir: string): boolean {
  try {
    return statSync(join(outDir, RESULTS_JOURNAL)).isFile();
  } catch {
    return false;
  }
}

/**
 * Turns the journal of a dead run into valid scorecards marked incomplete, written to `targetDir`; the journal
 * is removed afterwards. Refuses while the run that writes it is alive.
 */
export async function recoverResultsJournal(
  outDir: string,
  writeCards: WriteCards,
  targetDir: (runId: string) => string = () => outDir,
): Promise<RecoveredRun> {
  const path = join(outDir, RESULTS_JOURNAL);
  let text: string;
  let mtime: Date;
  try {
    text = readFileSync(path, 'utf8');
    mtime = statSync(path).mtime;
  } catch {
    throw new SandcheckError('RECOVER_NOTHING', `${outDir}: no run journal (${RESULTS_JOURNAL}) to recover`, {
      hint: 'only a run that did not finish leaves one',
    });
  }
  const lines = text.split('\n').filter((l) => l.length > 0);
  const parse = (l: string): unknown => {
    try {
      return JSON.parse(l);
    } catch {
      return undefined;
    }
  };
  const start = StartLine.safeParse(parse(lines[0] ?? ''));
  if (!start.success) throw new SandcheckError('RECOVER_NOTHING', `${path}: the first line is not a run start record; nothing can be recovered`);
  const s = start.data;
  if (s.bootId === readBootIdSync() && processStartTime(s.pid) === s.startTime) {
    throw new SandcheckError('RUN_ALIVE', `${outDir}: run ${s.runId} (pid ${s.pid}) is still writing into this directory`, {
      hint: 'wait for it, or use another --out',
    });
  }
  const security: SecurityResult[] = [];
  const task: TaskResult[] = [];
  let dropped = 0;
  for (const l of lines.slice(1)) {
    const r = ResultLine.safeParse(parse(l));
    if (!r.success) dropped++;
    else if (r.data.kind === 'security') security.push(r.data.result);
    else task.push(r.data.result);
  }
  const meta = {
    runId: s.runId,
    startedAt: new Date(s.startedAt),
    finishedAt: mtime,
    interrupted: false,
    incomplete: true,
    ...(s.environment ? { environment: s.environment } : {}),
    ...(s.watchedDaemons ? { watchedDaemons: s.watchedDaemons } : {}),
  };
  const written = await writeCards(targetDir(s.runId), {
    security: securityScorecard(s.backend, s.policy, meta, inRunOrder(security, s.selection)),
    task: taskScorecard(s.backend, s.policy, meta, inRunOrder(task, s.selection)),
  });
  rmSync(path, { force: true });
  return { runId: s.runId, results: security.length + task.length, dropped, files: written.files };
}
