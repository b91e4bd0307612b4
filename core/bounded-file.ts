import { constants } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import { errorMessage } from './errors.js';

/** Config, policy and task files (YAML/JSON) and programs: far above any real one, far below harm. */
export const CONFIG_FILE_MAX_BYTES = 1024 * 1024;
/** A task case's input data file. */
export const INPUT_FILE_MAX_BYTES = 16 * 1024 * 1024;

export type BoundedRead =
  { ok: true; bytes: Buffer } | { ok: false; reason: 'missing' | 'not-regular' | 'too-large' | 'unreadable' | 'binary'; message: string };

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Reads a regular file of at most `maxBytes`. Special files (/dev/zero, FIFOs, sockets, directories) are
 * refused from their metadata before a byte is read, and the open never blocks on a FIFO swapped in meanwhile.
 */
export async function readBoundedFile(path: string, maxBytes: number): Promise<BoundedRead> {
  let st;
  try {
    st = await lstat(path);
    if (st.isSymbolicLink()) st = await stat(path);
  } catch (err) {
    const code = err !== null && typeof err === 'object' && 'code' in err ? err.code : undefined;
    const missing = code === 'ENOENT' || code === 'ENOTDIR';
    return {
      ok: false,
      reason: missing ? 'missing' : 'unreadable',
      message: missing ? 'does not exist' : `cannot be read (${typeof code === 'string' ? code : errorMessage(err)})`,
    };
  }
  if (!st.isFile()) return { ok: false, reason: 'not-regular', message: `is ${kindOf(st)}, not a regular file` };
  if (st.size > maxBytes) return { ok: false, reason: 'too-large', message: `is ${st.size} bytes; the limit is ${maxBytes}` };
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string' ? err.code : errorMessage(err);
    return { ok: false, reason: 'unreadable', message: `cannot be opened (${code})` };
  }
  try {
    const fst = await handle.stat();
    if (!fst.isFile()) return { ok: false, reason: 'not-regular', message: `is ${kindOf(fst)}, not a regular file` };
    // Read one byte past the limit: a file that grew meanwhile is refused, never read whole.
    const buf = Buffer.alloc(Math.min(maxBytes, fst.size) + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, filled, buf.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled === buf.length) break;
    }
    if (filled > maxBytes || (filled === buf.length && filled > fst.size)) {
      return { ok: false, reason: 'too-large', message: `grew while being read (the limit is ${maxBytes} bytes)` };
    }
    return { ok: true, bytes: buf.subarray(0, filled) };
  } catch (err) {
    return { ok: false, reason: 'unreadable', message: errorMessage(err) };
  } finally {
    await handle.close();
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The same as UTF-8 text; a file with a NUL byte or that is not UTF-8 is refused as binary. */
export async function readBoundedText(
  path: string,
  maxBytes = CONFIG_FILE_MAX_BYTES,
): Promise<{ ok: true; text: string } | Extract<BoundedRead, { ok: false }>> {
  const r = await readBoundedFile(path, maxBytes);
  if (!r.ok) return r;
  let text: string;
  try {
    text = UTF8.decode(r.bytes);
  } catch {
    return { ok: false, reason: 'binary', message: 'is not UTF-8 text' };
  }
  if (text.includes('\u0000')) return { ok: false, reason: 'binary', message: 'is binary (it holds a NUL byte), not text' };
  return { ok: true, text };
}
