import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** Where a root run keeps its state: journals, labs, and the workspaces that boxes see as bind mounts. */
export const STATE_ROOT = '/run/sandcheck';
const TRAVERSE = 0o011;

/**
 * Creates `dir` with `mode`; each parent it has to create gets 0711 (traversable, not listable). A recursive
 * mkdir gives every directory it makes the leaf's mode: a 0700 journal directory made first on a fresh
 * machine turned /run/sandcheck 0700, and bwrap (run as the box's uid) could not reach any workspace.
 */
export function mkdirWithTraversableParents(dir: string, mode: number): void {
  mkdirSync(dirname(dir), { recursive: true, mode: 0o711 });
  mkdirSync(dir, { recursive: true, mode });
}

/**
 * A state root that other users cannot traverse (left 0700 by an earlier sandcheck) is made 0711 again. Only
 * a real directory owned by this user is touched; anything else is left as it is and reported by the caller's
 * own failure.
 */
export function repairStateRoot(root = STATE_ROOT): 'repaired' | 'ok' | 'absent' | 'not-ours' {
  let st;
  try {
    st = lstatSync(root);
  } catch {
    return 'absent';
  }
  if (!st.isDirectory() || st.uid !== process.getuid?.()) return 'not-ours';
  if ((st.mode & TRAVERSE) === TRAVERSE) return 'ok';
  chmodSync(root, (st.mode & 0o7777) | TRAVERSE);
  return 'repaired';
}
