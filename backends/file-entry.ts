import type { Stats } from 'node:fs';
import { lstat, readFile, readlink, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { FileKind, GotFile } from '../model/backend-contract.js';

/** What an lstat result is, in the download API's vocabulary (a file with other links is a hardlink). */
export function kindOf(st: Stats): FileKind {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'device';
  if (st.isFile()) return st.nlink > 1 ? 'hardlink' : 'file';
  return 'other';
}

/** lstat of one entry, the starting point of every download API: its record, or `missing` (no stats). */
export async function statEntry(abs: string, rel: string): Promise<{ st?: Stats; base: GotFile }> {
  let st: Stats;
  try {
    st = await lstat(abs);
  } catch {
    return { base: { path: rel, kind: 'missing', size: 0 } };
  }
  return { st, base: { path: rel, kind: kindOf(st), size: st.size, nlink: st.nlink } };
}

/**
 * Describes one workspace path for a download API. With followLinks (a naive API) a symlink's
 * target and a hardlinked file's bytes are returned; without it, only regular files are read.
 */
export async function describeEntry(root: string, rel: string, maxBytes: number, opts: { followLinks: boolean }): Promise<GotFile> {
  const abs = resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + sep)) return { path: rel, kind: 'other', size: 0, note: 'path leaves the workspace; not read' };
  // A path reached through a symlinked directory is a link, whatever its last component is.
  const parts = relative(root, abs).split(sep);
  for (let i = 1; i < parts.length; i++) {
    const dir = join(root, ...parts.slice(0, i));
    const pst = await lstat(dir).catch(() => undefined);
    if (pst?.isSymbolicLink()) {
      const linkTarget = await readlink(dir).catch(() => '?');
      const note = `reached through the symlinked directory ${parts.slice(0, i).join('/')}`;
      if (!opts.followLinks) return { path: rel, kind: 'symlink', size: 0, linkTarget, note: `${note}; not followed` };
      const target = await stat(abs).catch(() => undefined);
      const content = target?.isFile() && target.size <= maxBytes ? await readFile(abs) : undefined;
      return { path: rel, kind: 'symlink', size: target?.size ?? 0, linkTarget, note: `${note}; followed`, ...(content ? { content } : {}) };
    }
  }
  const { st, base } = await statEntry(abs, rel);
  if (!st) return base;
  const kind = base.kind;
  if (kind === 'symlink') {
    base.linkTarget = await readlink(abs).catch(() => '?');
    if (!opts.followLinks) return { ...base, note: 'links are never followed' };
    const target = await stat(abs).catch(() => undefined);
    if (!target?.isFile() || target.size > maxBytes) return { ...base, note: 'link followed: target not a readable regular file' };
    return { ...base, size: target.size, content: await readFile(abs), note: 'link followed' };
  }
  if (kind === 'hardlink' && !opts.followLinks) return { ...base, note: 'a file with other links; not read' };
  if (kind !== 'file' && kind !== 'hardlink') return base;
  if (st.size > maxBytes) return { ...base, note: `larger than ${maxBytes} bytes; not read` };
  return { ...base, content: await readFile(abs) };
}
