import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { WorkspaceEntry, WorkspaceListing } from '../../../model/probe.js';

const MAX_ENTRIES = 256;
const MAX_DEPTH = 8;

/**
 * What a task's program left in its workspace, read on the host without following any link: every entry that is
 * not a directory, and directories left empty, minus the files the harness put there (`put`). Bounded in count
 * and depth; a listing cut short says so, and the declared-outputs check treats that as a stray output.
 */
export async function listWorkspace(root: string, put: ReadonlySet<string>): Promise<WorkspaceListing> {
  const entries: WorkspaceEntry[] = [];
  let truncated = false;
  async function walk(dir: string, depth: number): Promise<void> {
    const found = await readdir(dir, { withFileTypes: true }).catch(() => []);
    if (found.length === 0 && dir !== root) entries.push({ path: relative(root, dir), kind: 'directory', size: 0 });
    for (const e of found.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entries.length >= MAX_ENTRIES) {
        truncated = true;
        return;
      }
      const path = join(dir, e.name);
      const rel = relative(root, path);
      if (e.isDirectory()) {
        if (depth >= MAX_DEPTH) truncated = true;
        else await walk(path, depth + 1);
      } else if (!put.has(rel)) {
        const size = await lstat(path).then(
          (st) => st.size,
          () => 0,
        );
        entries.push({ path: rel, kind: e.isFile() ? 'file' : e.isSymbolicLink() ? 'symlink' : 'other', size });
      }
    }
  }
  await walk(root, 0);
  return { entries, truncated };
}
