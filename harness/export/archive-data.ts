import { constants, inflateRawSync } from 'node:zlib';
import type { EntryData } from './archive-entry.js';

/** Worst-case deflate expansion per input byte (a 258-byte match costs ~2 bits), rounded up. */
const MAX_DEFLATE_RATIO = 1040;

/**
 * Up to maxBytes of an entry's content, without reading more than that much compressed input, so a
 * bomb cannot make a sniff expensive. undefined for unknown methods or corrupt data.
 */
export function entryPrefix(archive: Uint8Array, data: EntryData, maxBytes: number): Uint8Array | undefined {
  const stored = archive.subarray(data.offset, data.offset + data.length);
  if (data.method === 'stored') return stored.subarray(0, maxBytes);
  if (data.method !== 'deflate') return undefined;
  const input = stored.subarray(0, maxBytes);
  try {
    const out = inflateRawSync(input, {
      finishFlush: constants.Z_SYNC_FLUSH,
      maxOutputLength: input.length * MAX_DEFLATE_RATIO + 1024,
    });
    return new Uint8Array(out.buffer, out.byteOffset, Math.min(out.length, maxBytes));
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
