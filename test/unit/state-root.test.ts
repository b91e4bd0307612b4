import { mkdtemp, mkdir, rm, stat, symlink, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openOwnershipJournal } from '../../core/ownership-journal.js';
import { mkdirWithTraversableParents, repairStateRoot } from '../../core/state-root.js';

const modeOf = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

const made: string[] = [];
const tempBase = async (): Promise<string> => {
  const base = await mkdtemp(join(tmpdir(), 'sc-state-'));
  made.push(base);
  return base;
};

describe('state directories stay traversable for boxes that run as another uid', () => {
  afterEach(async () => {
    for (const base of made.splice(0)) await rm(base, { recursive: true, force: true });
  });

  it('a private directory made with its parents gives the parents 0711, not its own 0700', async () => {
    const base = await tempBase();
    mkdirWithTraversableParents(join(base, 'run', 'sandcheck', 'owners'), 0o700);
    expect(await modeOf(join(base, 'run'))).toBe(0o711);
    expect(await modeOf(join(base, 'run', 'sandcheck'))).toBe(0o711);
    expect(await modeOf(join(base, 'run', 'sandcheck', 'owners'))).toBe(0o700);
  });

  it('the ownership journal, opened first on a fresh machine, leaves its parent traversable', async () => {
    const base = await tempBase();
    const journal = openOwnershipJournal('rstateroot1', join(base, 'sandcheck', 'owners'));
    journal.close();
    expect(await modeOf(join(base, 'sandcheck'))).toBe(0o711);
    expect(await modeOf(join(base, 'sandcheck', 'owners'))).toBe(0o700);
  });

  it('a state root left 0700 is made 0711; one already traversable, absent, or a symlink is left alone', async () => {
    const base = await tempBase();
    const root = join(base, 'sandcheck');
    await mkdir(root, { mode: 0o700 });
    await chmod(root, 0o700);
    expect(repairStateRoot(root)).toBe('repaired');
    expect(await modeOf(root)).toBe(0o711);
    expect(repairStateRoot(root)).toBe('ok');
    expect(repairStateRoot(join(base, 'absent'))).toBe('absent');
    await symlink(root, join(base, 'link'));
    expect(repairStateRoot(join(base, 'link'))).toBe('not-ours');
  });
});
