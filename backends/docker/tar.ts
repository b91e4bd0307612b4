import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import * as tar from 'tar-stream';
import { SandcheckError } from '../../core/errors.js';
import { segmentsOf } from '../shared/workspace-path.js';

/**
 * Tar in and out of the box, in memory. Going in, the harness builds the archive (trusted). Coming out,
 * the archive is produced from files the box controls: it is parsed as hostile data with byte caps, only
 * the first entry is looked at, nothing is written to disk, and links are reported, never followed.
 */

export interface PackEntry {
  /** Relative, '/'-separated, already normalised. */
  name: string;
  type: 'file' | 'directory' | 'symlink';
  mode: number;
  uid: number;
  gid: number;
  content?: Uint8Array;
  /** For symlinks (only ever written by the harness itself, e.g. the image's /bin → usr/bin). */
  linkname?: string;
}

function asBuffer(c: unknown): Buffer {
  if (Buffer.isBuffer(c)) return c;
  if (c instanceof Uint8Array) return Buffer.from(c);
  return Buffer.from(String(c));
}

/** A fixed time, so the same files always give the same archive bytes. */
const EPOCH = new Date(0);

/** A file entry may name its source instead of holding its content: read only when the archive reaches it. */
export type LazyPackEntry = PackEntry & { source?: string };

/**
 * The archive as a stream, entry after entry: a file named by `source` is read when its turn comes, and the next
 * entry waits until the reader has taken the last (tar-stream's backpressure): a file or two in memory, not the archive.
 */
export function packStream(entries: readonly LazyPackEntry[]): Readable {
  const pack = tar.pack();
  void (async () => {
    try {
      for (const e of entries) {
        const content = e.type === 'file' ? (e.content ?? (e.source !== undefined ? await readFile(e.source) : new Uint8Array())) : undefined;
        const header: tar.Header = {
          size: content?.byteLength ?? 0,
          linkname: e.linkname ?? '',
          devmajor: 0,
          devminor: 0,
          name: e.name,
          type: e.type,
          mode: e.mode,
          uid: e.uid,
          gid: e.gid,
          mtime: EPOCH,
          uname: '',
          gname: '',
        };
        await new Promise<void>((resolve, reject) => {
          const done = (err?: Error | null): void => (err ? reject(err) : resolve());
          if (content) pack.entry(header, content, done);
          else pack.entry(header, done);
        });
      }
      pack.finalize();
    } catch (err) {
      pack.destroy(err instanceof Error ? err : new Error(String(err)));
    }
  })();
  // Byte mode: in object mode Readable.from would queue 16 whole chunks (whole files) ahead of the reader.
  return Readable.from(pack, { objectMode: false });
}

export async function packEntries(entries: readonly PackEntry[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of packStream(entries)) chunks.push(asBuffer(c));
  return Buffer.concat(chunks);
}

/** segmentsOf, and no NUL byte either: the archive API would cut the name there. */
export function workspaceSegments(rel: string): string[] {
  const segs = segmentsOf(rel);
  if (segs.some((s) => s.includes('\0'))) throw new SandcheckError('HARNESS', `path "${rel}" holds a NUL byte`);
  return segs;
}

export type ArchiveEntryKind = 'file' | 'directory' | 'symlink' | 'hardlink' | 'fifo' | 'device' | 'other';

export interface ArchiveEntry {
  name: string;
  kind: ArchiveEntryKind;
  /** The tar type as written in the archive (e.g. "character-device"). */
  tarType: string;
  /** Size claimed by the header. */
  size: number;
  /** For symlinks and hardlinks: where the link points, as stored (never resolved). */
  linkTarget?: string;
  /** Regular files whose size is within the cap. */
  content?: Uint8Array;
  note?: string;
}

export interface ReadArchiveOptions {
  /** Largest file content read into memory. */
  maxContentBytes: number;
  /** Largest number of archive bytes read before giving up (headers, padding, everything). */
  maxArchiveBytes: number;
  /** How long the whole read may take. */
  timeoutMs?: number;
}

function kindOf(type: string | null | undefined): ArchiveEntryKind {
  switch (type) {
    case 'file':
    case 'contiguous-file':
      return 'file';
    case 'directory':
      return 'directory';
    case 'symlink':
      return 'symlink';
    case 'link':
      return 'hardlink';
    case 'fifo':
      return 'fifo';
    case 'character-device':
    case 'block-device':
      return 'device';
    default:
      return 'other';
  }
}

/**
 * Reads the first entry of a tar stream produced by the box (`GET /containers/{id}/archive`). Stops and
 * destroys the source as soon as it knows the answer; a source that sends more than `maxArchiveBytes`, or
 * a malformed archive, gives `undefined` plus a reason rather than an exception.
 */
export async function readFirstEntry(source: Readable, o: ReadArchiveOptions): Promise<{ entry?: ArchiveEntry; problem?: string }> {
  const extract = tar.extract();
  let received = 0;
  let settled = false;
  return new Promise((resolve) => {
    const finish = (r: { entry?: ArchiveEntry; problem?: string }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      source.destroy();
      extract.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ problem: `the archive did not arrive within ${o.timeoutMs ?? 30_000} ms` }), o.timeoutMs ?? 30_000);
    source.on('data', (c: Buffer) => {
      received += c.length;
      if (received > o.maxArchiveBytes) finish({ problem: `the archive passed ${o.maxArchiveBytes} bytes before its first entry was read; not read further` });
    });
    source.on('error', (err: Error) => finish({ problem: `archive stream failed: ${err.message}` }));
    extract.on('error', (err: Error) => finish({ problem: `malformed archive: ${err.message}` }));
    extract.on('finish', () => finish({ problem: 'the archive holds no entry' }));
    extract.on('entry', (header, stream, next) => {
      const kind = kindOf(header.type);
      const size = header.size ?? 0;
      const base: ArchiveEntry = {
        name: header.name,
        kind,
        tarType: String(header.type),
        size,
        ...(header.linkname ? { linkTarget: header.linkname } : {}),
      };
      if (kind !== 'file') return finish({ entry: base });
      if (size > o.maxContentBytes) return finish({ entry: { ...base, note: `larger than ${o.maxContentBytes} bytes; not read` } });
      const parts: Buffer[] = [];
      let got = 0;
      stream.on('data', (d: unknown) => {
        const c = asBuffer(d);
        got += c.length;
        if (got > o.maxContentBytes) return finish({ entry: { ...base, note: `larger than ${o.maxContentBytes} bytes; not read` } });
        parts.push(c);
      });
      stream.on('end', () => {
        finish({ entry: { ...base, size: got, content: new Uint8Array(Buffer.concat(parts)) } });
        next();
      });
    });
    // By hand: tar-stream's extractor is a streamx Writable, not a Node one.
    source.on('data', (c: Buffer) => {
      if (settled) return;
      if (!extract.write(c)) source.pause();
    });
    extract.on('drain', () => source.resume());
    source.on('end', () => {
      if (!settled) extract.end(null);
    });
  });
}

/**
 * Reads the entries named in `wanted` from a whole-directory tar stream (one `GET /archive` for every
 * artifact). Other entries are skipped unread; a wanted file over `maxContentBytes` is reported, not read.
 * Stops as soon as every wanted name was seen, or once `maxArchiveBytes` have passed: what was not seen by
 * then is simply absent from the answer (the caller asks for it on its own).
 */
export async function readWantedEntries(source: Readable, wanted: ReadonlySet<string>, o: ReadArchiveOptions): Promise<Map<string, ArchiveEntry>> {
  const extract = tar.extract();
  const found = new Map<string, ArchiveEntry>();
  const twice = new Set<string>();
  let received = 0;
  let settled = false;
  return new Promise((resolve) => {
    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      source.destroy();
      extract.destroy();
      resolve(found);
    };
    const timer = setTimeout(finish, o.timeoutMs ?? 30_000);
    source.on('error', finish);
    extract.on('error', finish);
    extract.on('finish', finish);
    extract.on('entry', (header, stream, next) => {
      const name = header.name.replace(/\/+$/, '');
      const kind = kindOf(header.type);
      const size = header.size ?? 0;
      const base: ArchiveEntry = { name, kind, tarType: String(header.type), size, ...(header.linkname ? { linkTarget: header.linkname } : {}) };
      const record = (entry: ArchiveEntry): void => {
        // A name twice in one archive is not an answer to trust: leave it to the per-file path.
        if (found.has(name) || twice.has(name)) {
          found.delete(name);
          twice.add(name);
        } else found.set(name, entry);
      };
      const parts: Buffer[] = [];
      let got = 0;
      const reading = wanted.has(name) && kind === 'file' && size <= o.maxContentBytes;
      if (wanted.has(name) && !reading) record(kind === 'file' ? { ...base, note: `larger than ${o.maxContentBytes} bytes; not read` } : base);
      stream.on('data', (d: unknown) => {
        if (!reading) return;
        const c = asBuffer(d);
        got += c.length;
        if (got <= o.maxContentBytes) parts.push(c);
      });
      stream.on('end', () => {
        if (reading)
          record(
            got > o.maxContentBytes
              ? { ...base, note: `larger than ${o.maxContentBytes} bytes; not read` }
              : { ...base, size: got, content: new Uint8Array(Buffer.concat(parts)) },
          );
        if (found.size + twice.size >= wanted.size && [...wanted].every((w) => found.has(w) || twice.has(w))) return finish();
        next();
      });
      stream.resume();
    });
    source.on('data', (c: Buffer) => {
      if (settled) return;
      received += c.length;
      if (received > o.maxArchiveBytes) return finish();
      if (!extract.write(c)) source.pause();
    });
    extract.on('drain', () => source.resume());
    source.on('end', () => {
      if (!settled) extract.end(null);
    });
  });
}
