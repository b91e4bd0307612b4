import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { readNoFollow } from './left-in-box.js';

export type { HostFileState } from '../model/host-file.js';
import type { HostFileState } from '../model/host-file.js';

/** Reads `paths` (relative to the workspace) from the host: no download API in between, and no link followed. */
export async function readHostFiles(root: string, paths: readonly string[]): Promise<HostFileState[]> {
  return Promise.all(paths.map((p) => readHostFile(root, p)));
}

async function readHostFile(root: string, path: string): Promise<HostFileState> {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = join(root, ...parts.slice(0, i));
    const st = await lstat(dir).catch(() => undefined);
    if (!st) return { path, kind: 'missing', note: `${parts.slice(0, i).join('/')} is gone` };
    if (!st.isDirectory()) return { path, kind: 'other', note: `${parts.slice(0, i).join('/')} is no longer a directory` };
  }
  const full = join(root, path);
  const st = await lstat(full).catch(() => undefined);
  if (!st) return { path, kind: 'missing' };
  const mode = st.mode & 0o7777;
  if (!st.isFile()) return { path, kind: 'other', dev: st.dev, ino: st.ino, mode, note: st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file' };
  const bytes = await readNoFollow(full);
  if (!bytes) return { path, kind: 'other', dev: st.dev, ino: st.ino, mode, note: 'not readable' };
  return { path, kind: 'file', dev: st.dev, ino: st.ino, mode, size: st.size, sha256: createHash('sha256').update(bytes).digest('hex') };
}
