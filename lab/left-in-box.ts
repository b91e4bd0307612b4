import { constants } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { GotFile } from '../model/backend-contract.js';
import type { CanaryHit } from './canary-forms.js';

const MAX_FILES = 256;
const MAX_BYTES_PER_FILE = 1024 * 1024;
const MAX_DEPTH = 8;

/** `stdout (base64, across lines)`: the channel and, when it is not the raw value, the form it came out in. */
export function hitWhere(where: string, hit: Pick<CanaryHit, 'form' | 'acrossLines'>): string {
  const how = [hit.form === 'raw' ? '' : hit.form, hit.acrossLines ? 'across lines' : ''].filter(Boolean);
  return how.length > 0 ? `${where} (${how.join(', ')})` : where;
}

/** An artifact whose bytes were all fetched (and so scanned): the workspace scan need not read it again. */
export const readWhole = (f: GotFile): boolean => f.kind === 'file' && f.content !== undefined && f.content.length >= f.size;

/**
 * Regular files the box left in its workspace (bounded: count, bytes per file, depth), read on the
 * host without following any link, for the canary scan: a secret written to an unrequested file
 * is a secret that left the box once anyone exports or inspects the workspace. Yielded one at a
 * time, so that a scan holds one file's bytes, not the workspace's.
 */
export async function* workspaceFiles(root: string, skip: ReadonlySet<string>): AsyncGenerator<{ where: string; bytes: Uint8Array }> {
  let count = 0;
  async function* walk(dir: string, depth: number): AsyncGenerator<{ where: string; bytes: Uint8Array }> {
    if (depth > MAX_DEPTH) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (count >= MAX_FILES) return;
      const path = join(dir, e.name);
      const rel = relative(root, path);
      if (e.isDirectory()) yield* walk(path, depth + 1);
      else if (e.isFile() && !skip.has(rel)) {
        const bytes = await readNoFollow(path);
        if (bytes) {
          count += 1;
          yield { where: `workspace:${rel}`, bytes };
        }
      }
    }
  }
  yield* walk(root, 0);
}

/** The first MiB of a regular file, never through a link; undefined for anything else or what cannot be read. */
export async function readNoFollow(path: string): Promise<Buffer | undefined> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await fh.stat();
    if (!st.isFile()) return undefined;
    const size = Math.min(st.size, MAX_BYTES_PER_FILE);
    const buf = Buffer.alloc(size);
    const { bytesRead } = await fh.read(buf, 0, size, 0);
    return bytesRead === size ? buf : Buffer.from(buf.subarray(0, bytesRead));
  } catch {
    return undefined;
  } finally {
    await fh?.close();
  }
}
