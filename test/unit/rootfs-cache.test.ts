import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProbeRootfs, type ProbeRootfs } from '../../backends/docker/image.js';
import { readRootfsCache } from '../../backends/docker/rootfs-cache.js';

const canBuild = existsSync('/usr/bin/python3') && existsSync('/usr/bin/dpkg') && existsSync('/usr/bin/ldd');
const UID = 65529;

async function drain(r: ProbeRootfs): Promise<number> {
  let n = 0;
  for await (const c of r.tar()) n += (c as Buffer).byteLength;
  return n;
}

describe.skipIf(!canBuild)('the probe image build kept between runs', () => {
  let dir = '';
  let cacheDir = '';
  let fresh: ProbeRootfs;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sc-rootfs-cache-'));
    cacheDir = join(dir, 'cache');
    fresh = await buildProbeRootfs({ boxUid: UID, cacheDir: null });
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a second build reuses the file list and hash, with the same tag and bytes as a build without a cache', async () => {
    expect(fresh.cache).toBe('off');
    const first = await buildProbeRootfs({ boxUid: UID, cacheDir });
    expect(first.cache).toBe('stored');
    const second = await buildProbeRootfs({ boxUid: UID, cacheDir });
    expect(second.cache).toBe('reused');
    for (const r of [first, second]) expect([r.hash, r.bytes, r.files]).toEqual([fresh.hash, fresh.bytes, fresh.files]);
    // The reused build streams the very bytes the hash names (the stream checks them).
    expect(await drain(second)).toBe(fresh.bytes);
  }, 60_000);

  it('a cache another user could have written is not used', async () => {
    await buildProbeRootfs({ boxUid: UID, cacheDir });
    const file = join(cacheDir, `probe-rootfs-${UID}.json`);
    await chmod(file, 0o666);
    expect(readRootfsCache(cacheDir, UID)).toBeUndefined();
    expect((await buildProbeRootfs({ boxUid: UID, cacheDir })).cache).toBe('stored');
    await chmod(cacheDir, 0o777);
    expect(readRootfsCache(cacheDir, UID)).toBeUndefined();
    await chmod(cacheDir, 0o700);
    expect(readRootfsCache(cacheDir, UID)).toBeDefined();
  }, 60_000);

  it('a cache of another system state, or listing a file that changed, is built again', async () => {
    await buildProbeRootfs({ boxUid: UID, cacheDir });
    const file = join(cacheDir, `probe-rootfs-${UID}.json`);
    const kept = JSON.parse(await readFile(file, 'utf8')) as { key: string; files: string[]; hash: string };
    await writeFile(file, JSON.stringify({ ...kept, key: `${kept.key} (another dpkg status)` }), { mode: 0o600 });
    expect((await buildProbeRootfs({ boxUid: UID, cacheDir })).cache).toBe('stored');
    // A listed file that is gone (or whose inode, size, mode or mtime differ) fails the fingerprint.
    await writeFile(file, JSON.stringify({ ...kept, files: [...kept.files, join(dir, 'gone')].sort() }), { mode: 0o600 });
    const rebuilt = await buildProbeRootfs({ boxUid: UID, cacheDir });
    expect([rebuilt.cache, rebuilt.hash]).toEqual(['stored', fresh.hash]);
  }, 60_000);

  it('a reused hash that the bytes do not match fails the stream instead of passing other bytes', async () => {
    await buildProbeRootfs({ boxUid: UID, cacheDir });
    const file = join(cacheDir, `probe-rootfs-${UID}.json`);
    const kept = JSON.parse(await readFile(file, 'utf8')) as { hash: string };
    await writeFile(file, JSON.stringify({ ...kept, hash: '0'.repeat(64) }), { mode: 0o600 });
    const lied = await buildProbeRootfs({ boxUid: UID, cacheDir });
    expect(lied.cache).toBe('reused');
    await expect(drain(lied)).rejects.toThrow(/changed while the probe image was built/);
    // The cache that lied is gone: the next build makes its own.
    expect(readRootfsCache(cacheDir, UID)).toBeUndefined();
    expect((await buildProbeRootfs({ boxUid: UID, cacheDir })).cache).toBe('stored');
  }, 60_000);
});
