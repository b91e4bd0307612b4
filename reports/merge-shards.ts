import { join } from 'node:path';
import { SandcheckError } from '../core/errors.js';
import { exitCodeFor, securityScorecard, taskScorecard, type BackendFacts } from '../harness/scorecard-builder.js';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { allProbes } from '../suites/index.js';
import { readConfigFile } from '../core/config-file.js';
import { validateScorecard } from './validate.js';
import { writeScorecards, type CardFiles } from './write-cards.js';
import { visibleLine } from '../core/clean-text.js';

export interface ShardCards {
  dir: string;
  security: SecurityScorecard;
  task: TaskScorecard;
}

async function readCard(dir: string, kind: 'security' | 'task'): Promise<unknown> {
  const path = join(dir, `${kind}.json`);
  const doc = await readConfigFile(path);
  const check = validateScorecard(kind, doc);
  if (!check.valid)
    throw new SandcheckError('MERGE_REFUSED', `${path} is not a sandcheck ${kind} scorecard: ${check.errors.slice(0, 300)}`, {
      hint: 'give merge the --out directories of `sandcheck run --shard i/n`',
    });
  return doc;
}

export async function readShard(dir: string): Promise<ShardCards> {
  return { dir, security: (await readCard(dir, 'security')) as SecurityScorecard, task: (await readCard(dir, 'task')) as TaskScorecard };
}

/** Canonical JSON: keys sorted, so two equal policies compare equal whatever their key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

function refuse(
  message: string,
  hint = 'merge the shards of ONE evaluation: the same backend, policy, sandcheck version and exporter, each of 1/n … n/n once',
): never {
  throw new SandcheckError('MERGE_REFUSED', message, { hint });
}

/** Every shard must agree on what was run, how, and by which sandcheck; each of 1..n must be there once. */
function checkShards(shards: readonly ShardCards[]): { total: number } {
  const first = shards[0];
  if (!first) refuse('no directories to merge', 'give merge two or more --out directories');
  const same = (what: string, get: (s: ShardCards) => unknown): void => {
    const want = canonical(get(first));
    for (const s of shards) {
      const got = canonical(get(s));
      if (got !== want) refuse(`${s.dir} has another ${what} than ${first.dir} (${visibleLine(got).slice(0, 120)} vs ${visibleLine(want).slice(0, 120)})`);
    }
  };
  for (const s of shards) {
    if (s.security.run.id !== s.task.run.id) refuse(`${s.dir}: security.json and task.json come from different runs (${s.security.run.id}, ${s.task.run.id})`);
    if (!s.security.run.shard) refuse(`${s.dir} is not a shard (its run has no --shard i/n)`, 'run each part with `sandcheck run --shard i/n`');
  }
  same('backend', (s) => ({ name: s.security.backend.name, isolation: s.security.backend.isolation, enforces: s.security.backend.enforces }));
  same('policy', (s) => s.security.policy);
  same('sandcheck version', (s) => s.security.run.sandcheckVersion);
  same('exporter', (s) => s.security.run.exporter);
  same('label', (s) => s.security.environment?.label ?? null);
  same('shard count', (s) => s.security.run.shard?.total);
  const total = first.security.run.shard?.total ?? 0;
  const seen = new Map<number, string>();
  for (const s of shards) {
    const index = s.security.run.shard?.index ?? 0;
    const other = seen.get(index);
    if (other) refuse(`shard ${index}/${total} is given twice: ${other} and ${s.dir}`);
    seen.set(index, s.dir);
  }
  const missing = Array.from({ length: total }, (_, i) => i + 1).filter((i) => !seen.has(i));
  if (missing.length > 0)
    refuse(
      `shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${total}`).join(', ')} missing`,
      'merge the --out directory of every shard 1/n … n/n',
    );
  return { total };
}

/** Built-in probes in suite order, then user cases in the order the shards list them. */
function suiteOrder<R extends { id: string }>(results: readonly R[]): R[] {
  const rank = new Map(allProbes().map((p, i) => [p.id, i]));
  return results
    .map((r, i) => ({ r, i }))
    .sort((a, b) => (rank.get(a.r.id) ?? rank.size + a.i) - (rank.get(b.r.id) ?? rank.size + b.i))
    .map(({ r }) => r);
}

function uniqueResults<R extends { id: string }>(kind: string, shards: readonly ShardCards[], get: (s: ShardCards) => readonly R[]): R[] {
  const where = new Map<string, string>();
  const out: R[] = [];
  for (const s of shards) {
    for (const r of get(s)) {
      const other = where.get(r.id);
      if (other)
        refuse(
          `${kind} result ${visibleLine(r.id)} is in two shards: ${other} and ${s.dir}`,
          'shards of one selection never share a probe: were they run with the same --only/--tasks?',
        );
      where.set(r.id, s.dir);
      out.push(r);
    }
  }
  return suiteOrder(out);
}

/** One pair of cards from shards 1..n of one evaluation: results joined in suite order, summaries and cold-start figures recomputed. */
export function mergeShards(shards: readonly ShardCards[]): { security: SecurityScorecard; task: TaskScorecard } {
  const { total } = checkShards(shards);
  const sorted = [...shards].sort((a, b) => (a.security.run.shard?.index ?? 0) - (b.security.run.shard?.index ?? 0));
  const first = sorted[0] as ShardCards;
  const facts: BackendFacts = {
    name: first.security.backend.name,
    description: first.security.backend.description,
    isolation: first.security.backend.isolation,
    enforces: [...first.security.backend.enforces],
  };
  const starts = sorted.map((s) => Date.parse(s.security.run.startedAt));
  const ends = sorted.map((s) => Date.parse(s.security.run.finishedAt));
  const meta = {
    runId: `merged-${first.security.run.id}`.slice(0, 128),
    startedAt: new Date(Math.min(...starts)),
    finishedAt: new Date(Math.max(...ends)),
    interrupted: sorted.some((s) => s.security.run.interrupted || s.task.run.interrupted),
    incomplete: sorted.some((s) => s.security.run.incomplete || s.task.run.incomplete),
    exporter: first.security.run.exporter,
    ...(first.security.run.network !== undefined ? { network: first.security.run.network } : {}),
    ...(first.security.run.watchedDaemons !== undefined ? { watchedDaemons: first.security.run.watchedDaemons } : {}),
  };
  const policy = first.security.policy;
  const security = securityScorecard(
    facts,
    policy,
    meta,
    uniqueResults('security', sorted, (s) => s.security.results),
  );
  const task = taskScorecard(
    facts,
    policy,
    meta,
    uniqueResults('task', sorted, (s) => s.task.results),
  );
  const maxRssBytes = Math.max(...sorted.map((s) => s.security.run.harness.maxRssBytes));
  const run = (card: SecurityScorecard | TaskScorecard) => ({
    ...card.run,
    sandcheckVersion: first.security.run.sandcheckVersion,
    harness: { maxRssBytes },
    merged: { shards: total, runIds: sorted.map((s) => s.security.run.id) },
  });
  const environment = first.security.environment;
  return {
    security: { ...security, run: run(security), ...(environment ? { environment } : {}) },
    task: { ...task, run: run(task), ...(first.task.environment ? { environment: first.task.environment } : {}) },
  };
}

/** `sandcheck merge DIR… --out OUT`: reads each shard's cards, refuses a mixed set, writes one pair of scorecards. */
export async function mergeShardDirs(
  dirs: readonly string[],
  outDir: string,
  beforeWrite?: () => Promise<void>,
): Promise<{ security: SecurityScorecard; task: TaskScorecard; files: CardFiles; exitCode: 0 | 1 | 2 }> {
  const shards: ShardCards[] = [];
  for (const dir of dirs) shards.push(await readShard(dir));
  const merged = mergeShards(shards);
  // A refused merge creates nothing: --out is made only once the shards agree.
  await beforeWrite?.();
  const written = await writeScorecards(outDir, merged);
  return { ...written, exitCode: exitCodeFor(written.security, written.task) };
}
