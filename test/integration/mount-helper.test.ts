import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MS_NODEV, MS_NOSUID, mountFs, stopMountHelper, unmountFs } from '../../backends/shared/mount-helper.js';

const isRoot = process.getuid?.() === 0;
const mountsOf = async (dir: string): Promise<string[]> => (await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => l.split(' ')[1] === dir);

describe.skipIf(!isRoot)('the mount helper (one python3 calling mount(2) and umount2(2))', () => {
  afterAll(() => stopMountHelper());

  it('mounts a sized nosuid,nodev tmpfs, says when unmounting finds nothing, and unmounts a busy one only lazily', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-mount-helper-'));
    try {
      const name = `sandcheck-mount-test-${process.pid}`;
      const m = await mountFs(name, dir, 'tmpfs', MS_NOSUID | MS_NODEV, 'size=1048576,mode=0711');
      expect(m, m.message).toMatchObject({ ok: true });
      const [line] = await mountsOf(dir);
      expect(line).toMatch(new RegExp(`^${name} \\S+ tmpfs \\S*nosuid,nodev`));
      expect(line).toMatch(/size=1024k/);
      await expect(writeFile(join(dir, 'big'), Buffer.alloc(2 * 1024 * 1024))).rejects.toThrow(/ENOSPC/);
      expect((await unmountFs(dir, false)).ok).toBe(true);
      expect(await mountsOf(dir)).toEqual([]);
      expect(await unmountFs(dir, false)).toMatchObject({ ok: false, notMounted: true });
      // A failure carries the system's words.
      const bad = await mountFs(name, join(dir, 'missing'), 'tmpfs', 0, '');
      expect(bad).toMatchObject({ ok: false });
      expect(bad.message).toMatch(/No such file/);
    } finally {
      await unmountFs(dir, true);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers calls made at once, each with its own reply', async () => {
    const dirs = await Promise.all([1, 2, 3, 4].map(() => mkdtemp(join(tmpdir(), 'sandcheck-mount-helper-'))));
    try {
      const results = await Promise.all(dirs.map((d, i) => mountFs(`sandcheck-mount-test-${process.pid}-${i}`, d, 'tmpfs', MS_NOSUID | MS_NODEV, 'size=65536')));
      expect(results.every((r) => r.ok)).toBe(true);
      for (const [i, d] of dirs.entries()) expect((await mountsOf(d))[0]).toMatch(new RegExp(`^sandcheck-mount-test-${process.pid}-${i} `));
      const un = await Promise.all(dirs.map((d) => unmountFs(d, false)));
      expect(un.every((r) => r.ok)).toBe(true);
    } finally {
      for (const d of dirs) {
        await unmountFs(d, true);
        await rm(d, { recursive: true, force: true });
      }
    }
  });
});
