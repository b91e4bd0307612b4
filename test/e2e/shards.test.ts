import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateScorecard } from '../../reports/validate.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const noBwrap = await bwrapSkipReason();

// A slice of every kind: files, resources (a wall-bound one), identity, network (lab), lifecycle, export, tasks.
const IDS = [
  'secret-decoy-file',
  'fork-bomb',
  'wall-clock-sleep',
  'identity-uid',
  'metadata-ipv4',
  'residue',
  'stdout-flood',
  'export-symlink-host',
  'average-correct',
  'average-off-by-one',
  'daily-totals',
];

const verdicts = (cards: Awaited<ReturnType<typeof readCards>>): Record<string, string> =>
  Object.fromEntries([
    ...cards.security.results.map((r) => [r.id, r.verdict]),
    ...cards.task.results.map((r) => [r.id, `${r.verdict ?? 'error'}/${r.outcome}`]),
  ]);

describe.skipIf(noBwrap !== undefined)('shards: --shard i/n on three runners, `sandcheck merge` joins them', () => {
  it('shards 1/3, 2/3, 3/3 merged give the verdicts and exit code of one unsharded run; a mixed set is refused', async () => {
    const dir = await tempOut();
    const base = ['run', '--backend', 'bwrap', '--policy', 'ci', '--only', ...IDS];
    const whole = await sandcheck([...base, '--out', join(dir, 'whole')]);
    expect([0, 1, 2]).toContain(whole.exitCode);
    const shardDirs = [1, 2, 3].map((i) => join(dir, `shard-${i}`));
    const shardRuns = [];
    for (const [i, out] of shardDirs.entries()) shardRuns.push(await sandcheck([...base, '--shard', `${i + 1}/3`, '--out', out]));
    const sizes = [];
    for (const [i, out] of shardDirs.entries()) {
      const cards = await readCards(out);
      expect(cards.security.run.shard).toEqual({ index: i + 1, total: 3 });
      sizes.push(cards.security.results.length + cards.task.results.length);
    }
    // Every id ran exactly once over the three, and no shard was left empty.
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(IDS.length);
    expect(Math.min(...sizes)).toBeGreaterThan(0);

    const merged = await sandcheck(['merge', ...shardDirs, '--out', join(dir, 'merged')]);
    expect(merged.exitCode, merged.all).toBe(whole.exitCode);
    const m = await readCards(join(dir, 'merged'));
    const w = await readCards(join(dir, 'whole'));
    expect(verdicts(m)).toEqual(verdicts(w));
    // merge lists results in suite order; the unsharded run in --only order: the same ids either way.
    expect(m.security.results.map((r) => r.id).sort()).toEqual(w.security.results.map((r) => r.id).sort());
    expect(m.security.summary).toEqual(w.security.summary);
    expect(m.task.summary).toEqual(w.task.summary);
    expect(m.security.run.merged?.runIds).toEqual(await Promise.all(shardDirs.map(async (d) => (await readCards(d)).security.run.id)));
    for (const kind of ['security', 'task'] as const) expect(validateScorecard(kind, m[kind]).valid).toBe(true);

    // Shard 3 of another backend's run does not belong: refused before anything is written.
    const other = join(dir, 'process-3');
    await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', ...IDS, '--shard', '3/3', '--out', other]);
    const refused = await sandcheck(['merge', shardDirs[0] ?? '', shardDirs[1] ?? '', other, '--out', join(dir, 'refused')]);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toContain('MERGE_REFUSED');
    expect(refused.stderr).toMatch(/has another backend/);
    const missing = await sandcheck(['merge', shardDirs[0] ?? '', shardDirs[1] ?? '', '--out', join(dir, 'missing')]);
    expect(missing.exitCode).toBe(3);
    expect(missing.stderr).toContain('shard 3/3 missing');
  }, 600_000);
});
