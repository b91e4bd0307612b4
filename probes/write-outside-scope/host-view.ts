/**
 * The host side of write-outside-scope: a decoy file planted in a host directory of this execution only (outside
 * every write scope), snapshotted by inode, mode and hash before the box runs; after the box is gone, the same file
 * again, and every host directory the box was sent to (that directory, the shared /tmp, /var/tmp, /dev/shm) listed
 * for entries named with this execution's nonce. What it finds in shared directories it removes.
 *
 * The look is returned as lines (the observation's hostResidue): `changed: …`, `appeared: …` (a crossing unless
 * the policy's write scope grants the place), `seen: …` (what the host compared), `blind: …` (a place it could not
 * read).
 */
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbeContext } from '../../model/probe.js';

/** The host's shared temp directories a box may reach (a bound host /tmp, no mount namespace). */
export const SHARED_TEMP_DIRS: readonly string[] = ['/tmp', '/var/tmp', '/dev/shm'];
/** Bytes of the planted decoy, fixed per probe run. */
export const decoyBytes = (nonce: string): Buffer => Buffer.from(`sandcheck host decoy outside the write scope ${nonce}\n`);

interface FileSnap {
  dev: number;
  ino: number;
  mode: number;
  size: number;
  sha256: string;
}

const outsideDir = (ctx: ProbeContext): string => join(ctx.hostProbeDir, 'outside');
export const decoyPath = (ctx: ProbeContext): string => join(outsideDir(ctx), 'decoy.txt');
/** Where the box is sent to make new files: the execution's own host directory first, then the shared temp. */
export const watchedDirs = (ctx: ProbeContext): string[] => [outsideDir(ctx), ...SHARED_TEMP_DIRS];

function snap(path: string): FileSnap | string {
  try {
    const st = lstatSync(path);
    if (!st.isFile()) return st.isSymbolicLink() ? 'now a symbolic link' : 'no longer a regular file';
    return { dev: st.dev, ino: st.ino, mode: st.mode & 0o7777, size: st.size, sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'EIO';
  }
}

const before = new Map<string, FileSnap>();

/**
 * Plants the decoy (world-writable, in a world-writable directory: only the box's view of the host may keep it
 * from being written) and keeps its snapshot. Synchronous: it runs while the payload's arguments are made.
 */
export function plantOutside(ctx: ProbeContext): void {
  const dir = outsideDir(ctx);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  writeFileSync(decoyPath(ctx), decoyBytes(ctx.nonce), { mode: 0o666 });
  chmodSync(decoyPath(ctx), 0o666);
  const s = snap(decoyPath(ctx));
  if (typeof s !== 'string') before.set(ctx.nonce, s);
}

const describe = (s: FileSnap): string => `dev ${s.dev} ino ${s.ino} mode ${s.mode.toString(8)} ${s.size} bytes sha256 ${s.sha256.slice(0, 12)}…`;

/** After destroy: what changed or appeared outside the write scope (and removes what appeared in shared places). */
export function lookOutside(ctx: ProbeContext): Promise<string[]> {
  const lines: string[] = [];
  const path = decoyPath(ctx);
  const was = before.get(ctx.nonce);
  before.delete(ctx.nonce);
  if (!was) lines.push(`blind: ${path}: the decoy was never planted`);
  else {
    const now = snap(path);
    if (typeof now === 'string') lines.push(`changed: ${path}: ${now === 'ENOENT' ? 'gone' : now} (was ${describe(was)})`);
    else {
      const diff = (['dev', 'ino', 'mode', 'size', 'sha256'] as const).filter((k) => now[k] !== was[k]);
      if (diff.length > 0) lines.push(`changed: ${path}: ${diff.join(', ')} (${describe(was)} → ${describe(now)})`);
      else lines.push(`seen: ${path} unchanged (${describe(now)})`);
    }
  }
  for (const dir of watchedDirs(ctx)) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      lines.push(`blind: ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'EIO'}`);
      continue;
    }
    const own = dir === join(ctx.hostProbeDir, 'outside');
    // The execution's own directory holds only the decoy: anything else in it came from the box.
    const found = names.filter((n) => (own ? n !== 'decoy.txt' : n.includes(ctx.nonce)));
    for (const n of found) {
      const p = join(dir, n);
      lines.push(`appeared: ${p}`);
      if (!own) rmSync(p, { recursive: true, force: true });
    }
    lines.push(`seen: ${dir} listed (${found.length} new entr${found.length === 1 ? 'y' : 'ies'} of this execution)`);
  }
  return Promise.resolve(lines);
}
