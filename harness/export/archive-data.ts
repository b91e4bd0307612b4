import { constants, inflateRawSync } from 'node:zlib';
import type { EntryData } from './archive-entry.js';

/** Worst-case deflate expansion per input byte (a 258-byte match costs ~2 bits), rounded up. */
const MAX_DEFLATE_RATIO = 1040;

/** Compressed input always fed to a sniff: enough to get past a dynamic Huffman block header. */
const MIN_SNIFF_INPUT = 1024;

export interface EntryPrefix {
  bytes: Uint8Array;
  /** Bytes actually produced by inflating (may exceed bytes.length); callers charge this to their budget. */
  inflated: number;
}

/**
 * Up to maxBytes of an entry's content, reading at most max(maxBytes, 1 KiB) of compressed input, so one
 * sniff inflates at most ~1040× that. undefined for unknown methods or corrupt data.
 */
export function entryPrefix(archive: Uint8Array, data: EntryData, maxBytes: number): EntryPrefix | undefined {
  const stored = archive.subarray(data.offset, data.offset + data.length);
  if (data.method === 'stored') {
    const bytes = stored.subarray(0, maxBytes);
    return { bytes, inflated: bytes.length };
  }
  if (data.method !== 'deflate') return undefined;
  const input = stored.subarray(0, Math.max(maxBytes, MIN_SNIFF_INPUT));
  try {
    const out = inflateRawSync(input, {
      finishFlush: constants.Z_SYNC_FLUSH,
      maxOutputLength: input.length * MAX_DEFLATE_RATIO + 1024,
    });
    return { bytes: new Uint8Array(out.buffer, out.byteOffset, Math.min(out.length, maxBytes)), inflated: out.length };
  } catch {
    return undefined;
  }
}

/** The whole entry, refusing (undefined) to produce more than ceiling bytes. */
export function entryContent(archive: Uint8Array, data: EntryData, ceiling: number): Uint8Array | undefined {
  const stored = archive.subarray(data.offset, data.offset + data.length);
  if (data.method === 'stored') return stored.length <= ceiling ? stored : undefined;
  if (data.method !== 'deflate') return undefined;
  try {
    const out = inflateRawSync(stored, { maxOutputLength: Math.max(1, ceiling) });
    return new Uint8Array(out.buffer, out.byteOffset, out.length);
  } catch {
    return undefined;
  }
}
