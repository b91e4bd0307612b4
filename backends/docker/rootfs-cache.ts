import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { STATE_ROOT, mkdirWithTraversableParents } from '../../core/state-root.js';

/**
 * What a probe image build learned, kept for the next run: which host files go in (ldd over every extension module
 * is most of a build's cost) and the tar's hash. Used only while the package database, the loader cache and every
 * file's inode, size, mode and mtime are as recorded, and only from a file this user owns in a directory this user
 * owns, neither writable by anyone else: the list decides which host files go into an image a box reads. The import
 * still checks the bytes against the hash as they stream.
 */

export const ROOTFS_CACHE_DIR = join(STATE_ROOT, 'cache');

const CacheSchema = z.strictObject({
  version: z.literal(1),
  /** The Python version, the box uid and the stat of the package database and loader cache. */
  key: z.string(),
  /** Canonical host paths of the files and symlinks the image takes. */
  files: z.array(z.string()),
  dash: z.boolean(),
  /** sha256 over the archive's entries and their sources' inode, size, mode and mtime. */
  fingerprint: z.string(),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
});
export type RootfsCache = z.infer<typeof CacheSchema>;

const statKey = async (path: string): Promise<string> => {
  const st = await stat(path).catch(() => undefined);
  return st ? `${path}:${st.ino}:${st.size}:${st.mtimeMs}` : `${path}:absent`;
};

/** Changes whenever a package is installed or removed, or the loader cache is rebuilt. */
export async function systemKey(pythonVersion: string, boxUid: number): Promise<string> {
  const parts = await Promise.all(['/var/lib/dpkg/status', '/etc/ld.so.cache', `/usr/bin/python${pythonVersion}`].map(statKey));
  return JSON.stringify([pythonVersion, boxUid, ...parts]);
}

const cacheFile = (dir: string, boxUid: number): string => join(dir, `probe-rootfs-${boxUid}.json`);

/** Owned by this user and writable by nobody else. */
function trusted(st: { uid: number; mode: number }): boolean {
  return st.uid === process.geteuid?.() && (st.mode & 0o022) === 0;
}

/** The cache for this box uid, or undefined when absent, unreadable, not trusted or not this schema. */
export function readRootfsCache(dir: string, boxUid: number): RootfsCache | undefined {
  let fd: number | undefined;
  try {
    const d = lstatSync(dir);
    if (!d.isDirectory() || !trusted(d)) return undefined;
    fd = openSync(cacheFile(dir, boxUid), constants.O_RDONLY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || !trusted(st)) return undefined;
    const parsed = CacheSchema.safeParse(JSON.parse(readFileSync(fd, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Written whole (a temp file renamed over), 0600 in a 0700 directory; a directory it cannot make or trust is skipped. */
export function writeRootfsCache(dir: string, boxUid: number, cache: RootfsCache): boolean {
  try {
    mkdirWithTraversableParents(dir, 0o700);
    const d = lstatSync(dir);
    if (!d.isDirectory() || !trusted(d)) return false;
    const tmp = `${cacheFile(dir, boxUid)}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(cache), { mode: 0o600, flag: 'w' });
    renameSync(tmp, cacheFile(dir, boxUid));
    return true;
  } catch {
    return false;
  }
}

/** Best effort (it runs in a stream's error handler): a cache that cannot be removed is rebuilt over on the next store. */
export function forgetRootfsCache(dir: string, boxUid: number): void {
  try {
    rmSync(cacheFile(dir, boxUid), { force: true });
  } catch {
    // left for writeRootfsCache to replace
  }
}
