import { lstat } from 'node:fs/promises';
import { posix } from 'node:path';
import { DEFAULT_PROTECTED_PATHS, type Policy } from '../../model/policy.js';

/** One workspace-relative bind of the protected-paths option, in the order bwrap must apply them. */
export interface ProtectedBind {
  rel: string;
  readOnly: boolean;
}

/** The paths this policy protects (the policy's list, or the usual persistence places when it names none). */
export const protectedPathsOf = (policy: Policy): readonly string[] =>
  policy.files.protected && policy.files.protected.length > 0 ? policy.files.protected : DEFAULT_PROTECTED_PATHS;

/** Whether every component of rel under root is a real directory (and the last a directory or regular file): never a link. */
async function plainPath(root: string, rel: string): Promise<'file' | 'dir' | undefined> {
  const parts = rel.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const st = await lstat(posix.join(root, ...parts.slice(0, i))).catch(() => undefined);
    if (!st) return undefined;
    const last = i === parts.length;
    if (st.isDirectory()) {
      if (last) return 'dir';
    } else if (last && st.isFile()) return 'file';
    else return undefined;
  }
  return undefined;
}

/**
 * The binds that keep each existing protected path unwritable inside a read-write workspace: the path bound
 * read-only over itself, and each of its ancestor directories inside the workspace bound read-write over itself
 * first, so that renaming a parent away (EBUSY on a mount point) cannot move the read-only bind aside and let the
 * box write a fresh copy. A path that does not exist, or reaches through a symbolic link, is not bound (binding it
 * would follow the link on the host); bwrap cannot keep it from being created.
 */
export async function protectedBinds(workHost: string, paths: readonly string[]): Promise<{ binds: ProtectedBind[]; missing: string[] }> {
  const binds: ProtectedBind[] = [];
  const missing: string[] = [];
  const seen = new Set<string>();
  const add = (rel: string, readOnly: boolean): void => {
    const key = `${rel}\0${readOnly}`;
    if (!seen.has(key)) binds.push({ rel, readOnly });
    seen.add(key);
  };
  const found: string[] = [];
  for (const rel of paths) {
    if ((await plainPath(workHost, rel)) === undefined) missing.push(rel);
    else found.push(rel);
  }
  // Ancestors first (shallowest first), then the read-only binds, so no later read-write bind covers a read-only one.
  const ancestors = [
    ...new Set(
      found.flatMap((rel) =>
        rel
          .split('/')
          .slice(0, -1)
          .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
      ),
    ),
  ];
  for (const dir of ancestors.sort((a, b) => a.split('/').length - b.split('/').length)) if (!found.includes(dir)) add(dir, false);
  for (const rel of [...found].sort((a, b) => a.split('/').length - b.split('/').length)) add(rel, true);
  return { binds, missing };
}
