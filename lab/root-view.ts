import { lstat, readlink } from 'node:fs/promises';
import { procBytes } from '../core/proc-files.js';
import type { ProcessIdentity } from './host-process.js';

/** What the host sees at one path of a box's root: the file's device and inode, or why there is none. */
export interface RootEntry {
  path: string;
  dev?: number;
  ino?: number;
  /** `file`, `dir`, `other` (device, socket…), or absent with `error`. */
  type?: 'file' | 'dir' | 'other';
  /** An errno code (ENOENT, EACCES, ELOOP…) of the host's own lookup. */
  error?: string;
}

/** The host's lookups in the root of one process of the box, while it ran. */
export interface RootView {
  pid: number;
  /** The start of /proc/<pid>/cmdline (NULs as spaces): ties the process to this execution (its argv carries the nonce). */
  cmdline: string;
  entries: RootEntry[];
}

const MAX_LINKS = 16;
const code = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'EIO';

/**
 * lstat of `path` as the process whose root is `root` would resolve it: each component is looked up with
 * lstat, and a symlink is followed inside that root (an absolute target starts again at `root`, `..` never
 * climbs above it). Following it from the host's side instead would resolve the box's absolute links in
 * the host's own tree and compare the host's file with itself.
 */
export async function lookupInRoot(root: string, path: string): Promise<RootEntry> {
  let todo = path.split('/').filter((c) => c !== '' && c !== '.');
  const done: string[] = [];
  let links = 0;
  while (todo.length > 0) {
    const name = todo.shift() ?? '';
    if (name === '..') {
      done.pop();
      continue;
    }
    const here = `${root}/${[...done, name].join('/')}`;
    let st;
    try {
      st = await lstat(here);
    } catch (err) {
      return { path, error: code(err) };
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return { path, error: 'ELOOP' };
      const target = await readlink(here).catch(() => undefined);
      if (target === undefined) return { path, error: 'EACCES' };
      if (target.startsWith('/')) done.length = 0;
      todo = [...target.split('/').filter((c) => c !== '' && c !== '.'), ...todo];
      continue;
    }
    if (todo.length > 0 && !st.isDirectory()) return { path, error: 'ENOTDIR' };
    done.push(name);
    if (todo.length === 0) return { path, dev: st.dev, ino: st.ino, type: st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other' };
  }
  const st = await lstat(root === '' ? '/' : root).catch(() => undefined);
  return st ? { path, dev: st.dev, ino: st.ino, type: 'dir' } : { path, error: 'ENOENT' };
}

/**
 * The host's lookups of `paths` through /proc/<pid>/root; undefined when the process is gone, or mid-exec: it
 * already shows its new executable but not yet its arguments (as for the posture read), and a view that cannot
 * name the execution is worth nothing, so the sampler looks again.
 */
export async function readRootView(pid: number, paths: readonly string[]): Promise<RootView | undefined> {
  const cmdline = procBytes(`/proc/${pid}/cmdline`)?.subarray(0, 1024).toString('utf8').replaceAll('\0', ' ');
  if (cmdline === undefined || cmdline.trim() === '') return undefined;
  const root = `/proc/${pid}/root`;
  const entries: RootEntry[] = [];
  for (const p of paths.slice(0, 32)) entries.push(await lookupInRoot(root, p));
  return { pid, cmdline, entries };
}

// Kept beside the identity, by object, like the posture (lab/host-process.ts): the published observation schema has no field for it.
const views = new WeakMap<ProcessIdentity, RootView>();

export function attachRootView(id: ProcessIdentity, view: RootView): void {
  views.set(id, view);
}

export function rootViewOf(id: ProcessIdentity): RootView | undefined {
  return views.get(id);
}
