import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readBootIdSync } from '../../core/ownership-journal.js';
import { markChaosOwner, sweepStaleChaos } from '../../scripts/chaos-stale.js';

/** A pid that ran and is gone now (its start time can no longer match anything). */
const deadPid = (): number => Number(spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim());

describe('a chaos script that was killed leaves nothing for good', () => {
  const made: string[] = [];
  afterEach(async () => {
    for (const d of made.splice(0)) await rm(d, { recursive: true, force: true });
  });

  it("the next one sweeps a dead chaos script's private journals (and what they own), and leaves live or unowned ones alone", async () => {
    const root = await mkdtemp(join(tmpdir(), 'sc-chaos-stale-'));
    made.push(root);
    const pid = deadPid();
    const boot = readBootIdSync();
    const chaosDir = (name: string, owner?: object): string => {
      const dir = join(root, name);
      mkdirSync(dir, { mode: 0o700 });
      if (owner) writeFileSync(join(dir, 'chaos-owner.json'), JSON.stringify(owner));
      return dir;
    };
    // A dead chaos script's journal directory, holding the journal of one of its runs (dead too) that owns a scratch dir.
    const dead = chaosDir('sandcheck-chaos-owners-dead', { pid, startTime: 1, bootId: boot });
    const runId = `rchst${process.pid.toString(16)}`;
    const scratch = join(tmpdir(), `sandcheck-${runId}-abc`);
    mkdirSync(scratch);
    made.push(scratch);
    const lines = [
      { op: 'run', runId, pid, startTime: 1, bootId: boot, createdAt: new Date().toISOString() },
      { op: 'own', resource: { kind: 'dir', path: scratch } },
    ];
    writeFileSync(join(dead, `${runId}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n', { mode: 0o600 });
    // A dead chaos script's output root: no journals, removed at once.
    const deadRoot = chaosDir('sandcheck-chaos-deadroot', { pid, startTime: 1, bootId: boot });
    // A live one (this process) and one without an owner record: not provably dead, left alone.
    const live = chaosDir('sandcheck-chaos-owners-live');
    markChaosOwner(live);
    const unowned = chaosDir('sandcheck-chaos-owners-unowned');

    const r = await sweepStaleChaos(root, []);
    expect(r.kept).toEqual([]);
    expect(existsSync(scratch)).toBe(false);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(deadRoot)).toBe(false);
    expect(r.removed).toEqual(expect.arrayContaining([`${runId}: dir ${scratch}`, `chaos directory ${dead}`, `chaos directory ${deadRoot}`]));
    expect(existsSync(live)).toBe(true);
    expect(existsSync(unowned)).toBe(true);
  });
});
