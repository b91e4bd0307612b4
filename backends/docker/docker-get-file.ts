import { lstat, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../core/errors.js';
import type { GotFile } from '../../model/backend-contract.js';
import type { DockerClient, PathStat } from './client.js';
import { WORKSPACE } from './profiles.js';
import { readFirstEntry, readWantedEntries, workspaceSegments, type ArchiveEntry } from './tar.js';

/** Where a workspace file is read from: the container's archive API, and the host's side of its workspace for link counts. */
export interface FileSource {
  client: DockerClient;
  containerId: string;
  /** Appended to "missing" notes: why the workspace may be gone (its container stopped), or empty. */
  gone: string;
  /** The host directory behind the box's workspace (disk image or local volume); undefined for a remote daemon. */
  hostRoot(): Promise<string | undefined>;
}

const GO_MODE_DIR = 2 ** 31;
const GO_MODE_SYMLINK = 2 ** 27;
export const isDirMode = (mode: number): boolean => Math.floor(mode / GO_MODE_DIR) % 2 === 1;
export const isSymlinkMode = (mode: number): boolean => Math.floor(mode / GO_MODE_SYMLINK) % 2 === 1;

/** One workspace file through the daemon's archive API: every component stat'ed first, links reported and never followed. */
export async function getWorkspaceFile(src: FileSource, rel: string, maxBytes: number): Promise<GotFile> {
  let segs: string[];
  try {
    segs = workspaceSegments(rel);
  } catch (err) {
    return { path: rel, kind: 'other', size: 0, note: errorMessage(err) };
  }
  const { gone } = src;
  // The daemon resolves symlinks in parent directories (inside the container root): look at each parent first.
  for (let i = 1; i < segs.length; i++) {
    const parent = `${WORKSPACE}/${segs.slice(0, i).join('/')}`;
    let st: PathStat | undefined;
    try {
      st = await src.client.statPath(src.containerId, parent);
    } catch (err) {
      return { path: rel, kind: 'other', size: 0, note: `could not stat "${segs[i - 1]}": ${errorMessage(err)}` };
    }
    if (!st) return { path: rel, kind: 'missing', size: 0, note: `"${segs[i - 1]}" does not exist${gone}` };
    if (isSymlinkMode(st.mode)) return { path: rel, kind: 'symlink', size: 0, note: `"${segs[i - 1]}" on the way is a symlink; links are never followed` };
    if (!isDirMode(st.mode)) return { path: rel, kind: 'other', size: 0, note: `"${segs[i - 1]}" on the way is not a directory` };
  }
  const abs = `${WORKSPACE}/${segs.join('/')}`;
  // The last component too: Podman's GET /archive follows a final symlink (it would export the target, read as root).
  let last: PathStat | undefined;
  try {
    last = await src.client.statPath(src.containerId, abs);
  } catch (err) {
    return { path: rel, kind: 'other', size: 0, note: `could not stat: ${errorMessage(err)}` };
  }
  if (!last) return { path: rel, kind: 'missing', size: 0, ...(gone ? { note: gone.slice(2) } : {}) };
  if (isSymlinkMode(last.mode)) {
    // The daemon's stat names the fully resolved target; the host side of the volume has the link's own text.
    const own = await hostReadlink(await src.hostRoot(), segs);
    return {
      path: rel,
      kind: 'symlink',
      size: last.size,
      linkTarget: (own ?? last.linkTarget).slice(0, 4096),
      note: own !== undefined ? 'links are never followed' : 'links are never followed; target as the daemon resolves it',
    };
  }
  let archive;
  try {
    archive = await src.client.getArchive(src.containerId, abs);
  } catch (err) {
    return { path: rel, kind: 'other', size: 0, note: `could not export: ${errorMessage(err)}` };
  }
  if (!archive) return { path: rel, kind: 'missing', size: 0, ...(gone ? { note: gone.slice(2) } : {}) };
  // The archive is the box's data: first entry only, bytes capped, links reported and never followed.
  const { entry, problem } = await readFirstEntry(archive.stream, { maxContentBytes: maxBytes, maxArchiveBytes: maxBytes + 64 * 1024, timeoutMs: 30_000 });
  if (!entry) return { path: rel, kind: 'other', size: archive.stat?.size ?? 0, note: problem ?? 'unreadable archive' };
  const expected = segs[segs.length - 1];
  if (entry.name.replace(/\/$/, '') !== expected) {
    return { path: rel, kind: 'other', size: entry.size, note: `the archive's first entry is "${entry.name.slice(0, 100)}", not "${expected}"; not exported` };
  }
  const target = (entry.linkTarget ?? '').slice(0, 4096);
  switch (entry.kind) {
    case 'file': {
      // The archive API does not carry the link count: read it from the host side of the workspace volume.
      // As for every backend, a regular file with other links is a hardlink, and is not read.
      const nlink = await hostNlink(await src.hostRoot(), segs);
      if (nlink !== undefined && nlink > 1) return { path: rel, kind: 'hardlink', size: entry.size, nlink, note: `regular file with ${nlink} links; not read` };
      const links = nlink !== undefined ? { nlink } : {};
      return entry.content
        ? { path: rel, kind: 'file', size: entry.size, content: entry.content, ...links }
        : { path: rel, kind: 'file', size: entry.size, note: entry.note ?? 'not read', ...links };
    }
    case 'directory':
      return { path: rel, kind: 'directory', size: entry.size };
    case 'symlink':
      return { path: rel, kind: 'symlink', size: entry.size, linkTarget: target, note: 'links are never followed' };
    case 'hardlink':
      return { path: rel, kind: 'hardlink', size: entry.size, linkTarget: target, note: 'tar hard-link entry; not followed' };
    case 'fifo':
      return { path: rel, kind: 'fifo', size: 0 };
    case 'device':
      return { path: rel, kind: 'device', size: 0, note: `tar entry type ${entry.tarType}` };
    default:
      return { path: rel, kind: 'other', size: entry.size, note: `tar entry type ${entry.tarType}; not exported` };
  }
}

/**
 * Several workspace files through one archive of the whole workspace. Only plain answers are taken from it
 * (a file, a directory or a FIFO, named once; a link's target is described by the daemon's own stat): anything else, and whatever the archive did not
 * reach within `maxArchiveBytes`, is absent from the map, and the caller asks for it with getWorkspaceFile.
 */
export async function getWorkspaceFilesAtOnce(
  src: FileSource,
  rels: readonly string[],
  maxBytes: number,
  maxArchiveBytes: number,
): Promise<Map<string, GotFile>> {
  const out = new Map<string, GotFile>();
  const base = WORKSPACE.split('/').pop() ?? '';
  const nameOf = new Map<string, string>();
  for (const rel of rels) {
    try {
      nameOf.set(rel, `${base}/${workspaceSegments(rel).join('/')}`);
    } catch {
      // Not a workspace path: the per-file path says why.
    }
  }
  if (nameOf.size === 0) return out;
  let entries: Map<string, ArchiveEntry>;
  try {
    const archive = await src.client.getArchive(src.containerId, WORKSPACE);
    if (!archive) return out;
    entries = await readWantedEntries(archive.stream, new Set(nameOf.values()), { maxContentBytes: maxBytes, maxArchiveBytes, timeoutMs: 30_000 });
  } catch {
    return out;
  }
  const root = await src.hostRoot();
  for (const [rel, name] of nameOf) {
    const entry = entries.get(name);
    if (!entry) continue;
    switch (entry.kind) {
      case 'file': {
        const segs = workspaceSegments(rel);
        const nlink = await hostNlink(root, segs);
        if (nlink !== undefined && nlink > 1)
          out.set(rel, { path: rel, kind: 'hardlink', size: entry.size, nlink, note: `regular file with ${nlink} links; not read` });
        else if (root !== undefined && nlink === undefined)
          continue; // not a plain file on the host side: the per-file path decides
        else {
          const links = nlink !== undefined ? { nlink } : {};
          out.set(
            rel,
            entry.content
              ? { path: rel, kind: 'file', size: entry.size, content: entry.content, ...links }
              : { path: rel, kind: 'file', size: entry.size, note: entry.note ?? 'not read', ...links },
          );
        }
        break;
      }
      case 'directory':
        out.set(rel, { path: rel, kind: 'directory', size: entry.size });
        break;
      case 'fifo':
        out.set(rel, { path: rel, kind: 'fifo', size: 0 });
        break;
      default:
        break;
    }
  }
  return out;
}

/** The host path of a workspace entry on the volume (local daemons only): each parent component lstat'ed, no link followed. */
async function hostEntryPath(root: string | undefined, segs: readonly string[]): Promise<string | undefined> {
  if (root === undefined || segs.length === 0) return undefined;
  let cur = root;
  for (const seg of segs.slice(0, -1)) {
    cur = join(cur, seg);
    const st = await lstat(cur).catch(() => undefined);
    if (!st || st.isSymbolicLink() || !st.isDirectory()) return undefined;
  }
  return join(cur, segs[segs.length - 1] ?? '');
}

/** A workspace symlink's own target text, from the host's side of the volume; no link followed on the way. */
async function hostReadlink(root: string | undefined, segs: readonly string[]): Promise<string | undefined> {
  const at = await hostEntryPath(root, segs);
  return at === undefined ? undefined : readlink(at).catch(() => undefined);
}

/** The link count of a workspace file, from the host's side of the volume; a symlink anywhere gives up. Only a number is read, never content. */
async function hostNlink(root: string | undefined, segs: readonly string[]): Promise<number | undefined> {
  const at = await hostEntryPath(root, segs);
  const st = at === undefined ? undefined : await lstat(at).catch(() => undefined);
  return st?.isFile() ? st.nlink : undefined;
}
