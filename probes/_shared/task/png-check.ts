import { crc32 } from 'node:zlib';
import type * as pngjs from 'pngjs';
import { lazyRequire } from '../../../core/lazy-require.js';

const loadPngjs = lazyRequire<typeof pngjs>('pngjs');

/** A decoded PNG as RGBA pixels. */
export interface DecodedPng {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, row-major. */
  data: Buffer;
}

export interface PngExpectation {
  width?: number | undefined;
  height?: number | undefined;
  /** Distinct colours the image must at least have; 2 (not blank) unless said otherwise. */
  minColours?: number | undefined;
}

/** Decodes with pngjs (CRCs checked, filter bytes and chunk layout validated); a malformed file is a reason, never a throw. */
export function decodePng(bytes: Uint8Array): DecodedPng | string {
  try {
    const png = loadPngjs().PNG.sync.read(Buffer.from(bytes), { checkCRC: true });
    return { width: png.width, height: png.height, data: png.data };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return `not a valid PNG: ${why}${why.includes('end of stream') ? (badCrcChunk(Buffer.from(bytes)) ?? '') : ''}`;
  }
}

/** pngjs's sync reader stops at a CRC mismatch and then reports "unrecognised content": name the chunk. */
function badCrcChunk(buf: Buffer): string | undefined {
  for (let off = 8; off + 12 <= buf.length;) {
    const len = buf.readUInt32BE(off);
    if (off + 12 + len > buf.length) return undefined;
    const body = buf.subarray(off + 4, off + 8 + len);
    if (crc32(body) >>> 0 !== buf.readUInt32BE(off + 8 + len)) return ` (CRC mismatch in the ${body.toString('latin1', 0, 4)} chunk at byte ${off})`;
    off += 12 + len;
  }
  return undefined;
}

export function rgbaAt(png: DecodedPng, x: number, y: number): number {
  return png.data.readUInt32BE((y * png.width + x) * 4);
}

/** Distinct RGBA values, counted up to `cap`. */
export function distinctColours(png: DecodedPng, cap = 1024): number {
  const seen = new Set<number>();
  for (let i = 0; i < png.data.length && seen.size < cap; i += 4) seen.add(png.data.readUInt32BE(i));
  return seen.size;
}

export function checkPng(bytes: Uint8Array, want: PngExpectation): { png: DecodedPng; colours: number } | string {
  const png = decodePng(bytes);
  if (typeof png === 'string') return png;
  if ((want.width !== undefined && png.width !== want.width) || (want.height !== undefined && png.height !== want.height)) {
    return `the image is ${png.width}×${png.height}, expected ${want.width ?? 'any'}×${want.height ?? 'any'}`;
  }
  const colours = distinctColours(png);
  const min = want.minColours ?? 2;
  if (colours < min) return colours <= 1 ? 'the image is blank (a single colour)' : `the image has ${colours} distinct colours, expected at least ${min}`;
  return { png, colours };
}
