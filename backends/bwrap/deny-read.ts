import { lstat, readdir } from 'node:fs/promises';
import { posix } from 'node:path';
import { SandcheckError } from '../../core/errors.js';
import { deniedToRead } from '../../model/deny-read.js';
import type { Policy } from '../../model/policy.js';

/** One workspace-relative path the denyReadPaths option hides: a file under /dev/null, a directory under an empty read-only tmpfs. */
export interface HiddenPath {
  rel: string;
  dir: boolean;
}

/** Bounds of the walk: a workspace larger than this is refused rather than half hidden. */
const MAX_ENTRIES = 20_000;
const MAX_DEPTH = 32;

/** The deny-list the policy asks (empty: nothing to hide). */
export const denyReadOf = (policy: Policy): readonly string[] => policy.files.denyRead ?? [];

/**
 * Every file and directory of the workspace a deny glob matches, found by walking it without following a link (a
 * hidden directory is not walked into). A matching symbolic link is not hidden: binding over it would follow it on the
 * host; what it points to is hidden only if it matches itself. Throws (HARNESS) past maxEntries: the exec does not
 * run with a deny-list half applied.
 */
export async function hiddenPaths(workHost: string, globs: readonly string[], maxEntries = MAX_ENTRIES): Promise<HiddenPath[]> {
  if (globs.length === 0) return [];
  const out: HiddenPath[] = [];
  let seen = 0;
  const walk = async (rel: string, depth: number): Promise<void> => {
    const names = await readdir(rel === '' ? workHost : posix.join(workHost, rel)).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (++seen > maxEntries)
        throw new SandcheckError(
          'HARNESS',
          `the workspace holds more than ${maxEntries} entries: bwrap would leave part of it outside the deny-list (files.denyRead)`,
        );
      const child = rel === '' ? name : `${rel}/${name}`;
      const st = await lstat(posix.join(workHost, child)).catch(() => undefined);
      if (!st || st.isSymbolicLink()) continue;
      if (deniedToRead(globs, child)) out.push({ rel: child, dir: st.isDirectory() });
      else if (st.isDirectory() && depth < MAX_DEPTH) await walk(child, depth + 1);
    }
  };
  await walk('', 0);
  return out;
}
