import { describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { mergeShards, type ShardCards } from '../../reports/merge-shards.js';
import { validateScorecard } from '../../reports/validate.js';
import { fabricatedRun, secResult, taskResult } from './gate-fixtures.js';

/** Shard i of n: a fabricated run whose cards carry run.shard, as `run --shard i/n` writes them. */
function shard(index: number, total: number, security: SecurityResult[], opts: { backend?: string; tasks?: string[]; version?: string } = {}): ShardCards {
  const run = fabricatedRun(
    `shard-${index}`,
    security,
    (opts.tasks ?? []).map((id) => taskResult(id, 'as-expected')),
    opts.backend ? { backend: opts.backend } : {},
  );
  const mark = <C extends ShardCards['security'] | ShardCards['task']>(card: C): C => ({
    ...card,
    run: { ...card.run, id: `r000000000${index}`, shard: { index, total }, ...(opts.version ? { sandcheckVersion: opts.version } : {}) },
  });
  return { dir: run.dir, security: mark(run.security), task: mark(run.task) };
}

function refusal(fn: () => unknown): SandcheckError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SandcheckError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('sandcheck merge: shards into one pair of scorecards', () => {
  // Real ids, so the merged order is the suite's.
  const parts = () => [
    shard(2, 3, [secResult('fork-bomb', 'held'), secResult('metadata-ipv4', 'crossed')], { tasks: ['average-correct'] }),
    shard(1, 3, [secResult('secret-decoy-file', 'held'), secResult('wall-clock-spin', 'inconclusive')]),
    shard(3, 3, [secResult('residue', 'held')], { tasks: ['daily-totals'] }),
  ];

  it('joins every result once, in suite order, with summaries recomputed, and the cards validate', () => {
    const merged = mergeShards(parts());
    expect(merged.security.results.map((r) => r.id)).toEqual(['secret-decoy-file', 'fork-bomb', 'wall-clock-spin', 'metadata-ipv4', 'residue']);
    expect(merged.security.summary).toMatchObject({ total: 5, held: 3, crossed: 1, inconclusive: 1 });
    expect(merged.task.summary).toMatchObject({ total: 2, asExpected: 2 });
    expect(merged.security.run.merged).toEqual({ shards: 3, runIds: ['r0000000001', 'r0000000002', 'r0000000003'] });
    expect(merged.security.run.shard).toBeUndefined();
    expect(validateScorecard('security', merged.security)).toMatchObject({ valid: true });
    expect(validateScorecard('task', merged.task)).toMatchObject({ valid: true });
  });

  it('refuses a missing shard, a shard given twice, mixed backends, policies, versions and non-shards, naming the directory', () => {
    const [a, b, c] = parts() as [ShardCards, ShardCards, ShardCards];
    expect(refusal(() => mergeShards([a, b])).message).toContain('shard 3/3 missing');
    expect(refusal(() => mergeShards([a, b, c, { ...b, dir: 'again' }])).message).toMatch(/shard 1\/3 is given twice: shard-1 and again/);
    const docker = shard(3, 3, [secResult('residue', 'held')], { backend: 'docker-hardened' });
    expect(refusal(() => mergeShards([a, b, docker])).message).toMatch(/shard-3 has another backend/);
    const lax = { ...c, security: { ...c.security, policy: { ...c.security.policy, resources: { ...c.security.policy.resources, processes: 4096 } } } };
    expect(refusal(() => mergeShards([a, b, lax])).message).toMatch(/shard-3 has another policy/);
    const older = shard(3, 3, [secResult('residue', 'held')], { version: '0.0.1' });
    expect(refusal(() => mergeShards([a, b, older])).message).toMatch(/another sandcheck version/);
    const { shard: _dropped, ...plainRun } = c.security.run;
    expect(refusal(() => mergeShards([a, b, { ...c, security: { ...c.security, run: plainRun } }])).message).toMatch(/shard-3 is not a shard/);
    const fourths = shard(3, 4, [secResult('residue', 'held')]);
    expect(refusal(() => mergeShards([a, b, fourths])).message).toMatch(/another shard count/);
    for (const e of [refusal(() => mergeShards([a, b]))]) expect(e.code).toBe('MERGE_REFUSED');
  });

  it('refuses a probe that two shards both ran (shards of different selections)', () => {
    const [a, b, c] = parts() as [ShardCards, ShardCards, ShardCards];
    const overlap = { ...c, security: { ...c.security, results: [...c.security.results, secResult('fork-bomb', 'held')] } };
    expect(refusal(() => mergeShards([a, b, overlap])).message).toMatch(/fork-bomb is in two shards: shard-2 and shard-3/);
  });
});
