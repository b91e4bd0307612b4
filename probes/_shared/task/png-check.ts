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

/** `#rrggbb` (and the alpha byte when it is not opaque) of an RGBA value as rgbaAt reads it. */
export function hexColour(rgba: number): string {
  const hex = (rgba >>> 0).toString(16).padStart(8, '0');
  return `#${hex.slice(0, 6)}${hex.endsWith('ff') ? '' : hex.slice(6)}`;
}

/** The first pixel whose colour is none of `allowed`, or undefined. */
export function strayColour(png: DecodedPng, allowed: readonly number[]): { x: number; y: number; colour: number } | undefined {
  const ok = new Set(allowed.map((c) => c >>> 0));
  for (let i = 0; i < png.data.length; i += 4) {
    const colour = png.data.readUInt32BE(i);
    if (!ok.has(colour)) return { x: (i / 4) % png.width, y: Math.floor(i / 4 / png.width), colour };
  }
  return undefined;
}

/**
 * One column of a bar chart read from the baseline (the bottom row) up: the bar colour must be one contiguous run
 * standing on the baseline with only background above it. The run's height in pixels, or what is wrong with it.
 */
export function barColumn(png: DecodedPng, x: number, colours: { bar: number; background: number }): number | string {
  const bar = colours.bar >>> 0;
  const background = colours.background >>> 0;
  let height = 0;
  let y = png.height - 1;
  while (y >= 0 && rgbaAt(png, x, y) === bar) {
    height++;
    y--;
  }
  for (; y >= 0; y--) {
    const c = rgbaAt(png, x, y);
    if (c === bar) {
      const above = png.height - 1 - y;
      return height === 0
        ? `column x=${x} does not stand on the baseline: its lowest bar pixel is ${above} px above the bottom row`
        : `column x=${x} is not one run from the baseline: bar colour again at ${above} px above the bottom row after a gap`;
    }
    if (c !== background)
      return `column x=${x} has ${hexColour(c)} at y=${y}, neither the bar colour ${hexColour(bar)} nor the background ${hexColour(background)}`;
  }
  return height;
}
