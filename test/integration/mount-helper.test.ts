import { mkdir, mkdtemp, readdir, readFile, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { MS_NOATIME, MS_NODEV, MS_NOSUID, mountFs, mountImageCopy, stopMountHelper, unmountFs } from '../../backends/shared/mount-helper.js';

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
      const results = await Promise.all(
        dirs.map((d, i) => mountFs(`sandcheck-mount-test-${process.pid}-${i}`, d, 'tmpfs', MS_NOSUID | MS_NODEV, 'size=65536')),
      );
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

  it('mounts a sparse copy of an ext4 template on its own loop device, which detaches itself at umount', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-mount-helper-'));
    const size = 64 * 1024 * 1024;
    try {
      const template = join(dir, 'template.img');
      await writeFile(template, '');
      await execa('truncate', ['-s', String(size), template]);
      await execa('mkfs.ext4', ['-q', '-F', '-m', '0', '-b', '4096', '-O', '^has_journal', template], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
      const [a, b] = [join(dir, 'a'), join(dir, 'b')];
      await Promise.all([mkdir(a), mkdir(b)]);
      const ra = await mountImageCopy(template, join(dir, 'a.img'), size, a, MS_NOSUID | MS_NODEV | MS_NOATIME);
      const rb = await mountImageCopy(template, join(dir, 'b.img'), size, b, MS_NOSUID | MS_NODEV | MS_NOATIME);
      expect(ra, ra?.message).toMatchObject({ ok: true });
      expect(rb, rb?.message).toMatchObject({ ok: true });
      const [la] = await mountsOf(a);
      const [lb] = await mountsOf(b);
      expect(la).toMatch(/^\/dev\/loop\d+ \S+ ext4 \S*nosuid,nodev,noatime/);
      const devA = la?.split(' ')[0] ?? '';
      expect(lb?.split(' ')[0]).not.toBe(devA);
      // Each copy is its own filesystem of the template's size, and stays sparse on the host.
      await writeFile(join(a, 'only-in-a'), 'x');
      expect(await readdir(b)).not.toContain('only-in-a');
      const fsA = await statfs(a);
      expect(fsA.blocks * fsA.bsize).toBeGreaterThan(size * 0.9);
      expect((await stat(join(dir, 'b.img'))).blocks * 512).toBeLessThan(size / 8);
      // An existing image is never overwritten.
      expect(await mountImageCopy(template, join(dir, 'a.img'), size, b, 0)).toMatchObject({ ok: false });
      const loop = devA.replace('/dev/', '');
      expect((await readFile(`/sys/block/${loop}/loop/backing_file`, 'utf8')).trim()).toBe(join(dir, 'a.img'));
      expect((await unmountFs(a, false)).ok).toBe(true);
      expect((await unmountFs(b, false)).ok).toBe(true);
      // autoclear: no backing file once the mount is gone (some kernels detach from a work queue: a short wait).
      const attached = async (): Promise<boolean> =>
        readFile(`/sys/block/${loop}/loop/backing_file`, 'utf8').then(
          () => true,
          () => false,
        );
      for (let i = 0; i < 40 && (await attached()); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await attached()).toBe(false);
    } finally {
      await unmountFs(join(dir, 'a'), true);
      await unmountFs(join(dir, 'b'), true);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
