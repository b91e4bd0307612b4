export type ArchiveEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'char-device' | 'block-device' | 'fifo' | 'socket' | 'other';

export interface EntryData {
  /** Offset of the entry's stored bytes in the archive. */
  offset: number;
  /** Stored (possibly compressed) length. */
  length: number;
  method: 'stored' | 'deflate' | 'other';
}

export interface ArchiveEntry {
  /** The name an extractor following the format would use (pax/GNU long names applied). */
  name: string;
  /**
   * Other names some extractor might use instead (raw ustar name under a pax/GNU long name, zip Unicode Path
   * extra, a differing zip local header name). Each is judged like the name itself.
   */
  altNames: string[];
  /** A zip local header name that differs from the central directory: legitimate writers never do this. */
  conflictingName?: string;
  type: ArchiveEntryType;
  linkTarget?: string;
  /** Declared (uncompressed) size. */
  size: number;
  data?: EntryData;
  /** Zip traditional or strong encryption: the bytes cannot be judged. */
  encrypted?: boolean;
  /** Format-specific detail such as the tar typeflag or the zip mode. */
  note?: string;
}

export interface ArchiveListing {
  format: 'tar' | 'zip';
  entries: ArchiveEntry[];
  /** Stopped at the entry cap; the rest was not looked at. */
  truncated: boolean;
  /** Why parsing stopped early on a damaged archive. */
  malformed?: string;
}

/** Bounds-checked little/big-endian reads: garbage yields undefined, never an exception. */
export function u16le(b: Uint8Array, at: number): number | undefined {
  if (at < 0 || at + 2 > b.length) return undefined;
  return (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
}

export function u32le(b: Uint8Array, at: number): number | undefined {
  if (at < 0 || at + 4 > b.length) return undefined;
  return ((b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16) | ((b[at + 3] ?? 0) << 24)) >>> 0;
}

/** 64-bit little-endian as a number, undefined beyond 2^53. */
export function u64le(b: Uint8Array, at: number): number | undefined {
  const lo = u32le(b, at);
  const hi = u32le(b, at + 4);
  if (lo === undefined || hi === undefined || hi >= 0x200000) return undefined;
  return hi * 0x100000000 + lo;
}

const lenientUtf8 = new TextDecoder('utf-8');

export function decodeName(bytes: Uint8Array, utf8: boolean): string {
  return utf8 ? lenientUtf8.decode(bytes) : Buffer.from(bytes).toString('latin1');
}
