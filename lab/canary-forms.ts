import type { Canary } from './canaries.js';

/**
 * The forms in which a canary value is recognised. `mixed-case` is the raw value with its letters
 * in any case other than raw, lower or upper; hex, base32, UTF-16 and percent-encoding match in any
 * letter case; base64 is case-sensitive. One transform deep: base64 of hex, compression or XOR
 * are not recognised.
 */
export const CANARY_FORMS = [
  'raw',
  'lower',
  'upper',
  'mixed-case',
  'reversed',
  'hex',
  'base64',
  'base64url',
  'base32',
  'utf16le',
  'utf16be',
  'url-encoded',
] as const;
export type CanaryForm = (typeof CANARY_FORMS)[number];

export interface CanaryPattern {
  form: CanaryForm;
  bytes: Buffer;
  /** ASCII letters match in any case. */
  caseless: boolean;
}

export interface CanaryHit {
  label: string;
  value: string;
  form: CanaryForm;
  /** Byte offset of the occurrence found first in the scanned input. */
  offset: number;
  /** Found only once line breaks were removed (see ScannerOptions.acrossLines). */
  acrossLines?: true;
}

/** Encodings shorter than this are not searched (too likely to occur by chance); `raw` always is. */
export const MIN_PATTERN_BYTES = 16;

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32(buf: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const byte of buf) {
    acc = ((acc << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/**
 * The characters of `encode(k zero bytes + value)` that depend on the value's bits only: what
 * any encoder prints for the value wherever it sits in the encoded input (k = its offset mod
 * the encoding's block), whatever bytes surround it.
 */
function stableMiddle(value: Buffer, prefixBytes: number, bitsPerChar: number, encode: (b: Buffer) => string): string {
  const encoded = encode(Buffer.concat([Buffer.alloc(prefixBytes), value]));
  const first = Math.ceil((8 * prefixBytes) / bitsPerChar);
  const end = Math.floor((8 * (prefixBytes + value.length)) / bitsPerChar);
  return encoded.slice(first, end);
}

/** Every named byte pattern of one canary value (duplicates removed, short encodings dropped). */
export function canaryPatterns(value: string): CanaryPattern[] {
  const raw = Buffer.from(value, 'utf8');
  const out: CanaryPattern[] = [];
  const seen = new Set<string>();
  const add = (form: CanaryForm, bytes: Buffer, caseless: boolean): void => {
    if (bytes.length === 0 || (form !== 'raw' && bytes.length < MIN_PATTERN_BYTES)) return;
    const key = `${caseless ? 'i' : 'x'}${bytes.toString('hex')}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ form, bytes, caseless });
  };
  add('raw', raw, false);
  add('lower', Buffer.from(value.toLowerCase()), false);
  add('upper', Buffer.from(value.toUpperCase()), false);
  add('mixed-case', Buffer.from(value.toLowerCase()), true);
  add('reversed', Buffer.from(raw).reverse(), true);
  add('hex', Buffer.from(raw.toString('hex')), true);
  for (let k = 0; k < 3; k++) {
    add('base64', Buffer.from(stableMiddle(raw, k, 6, (b) => b.toString('base64'))), false);
    add('base64url', Buffer.from(stableMiddle(raw, k, 6, (b) => b.toString('base64url'))), false);
  }
  for (let k = 0; k < 5; k++) add('base32', Buffer.from(stableMiddle(raw, k, 5, base32)), true);
  add('utf16le', Buffer.from(value, 'utf16le'), true);
  add('utf16be', Buffer.from(value, 'utf16le').swap16(), true);
  add('url-encoded', Buffer.from([...raw].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')), true);
  return out;
}

const FOLD = new Uint8Array(256).map((_, i) => (i >= 0x41 && i <= 0x5a ? i + 0x20 : i));
const HASH_BITS = 16;
const GRAM = 4;

export interface CanaryPatternEntry {
  canary: number;
  /** The pattern bytes with ASCII letters lower-cased. */
  folded: Uint8Array;
  /** Patterns of one canary whose folded bytes are these; the first that matches names the hit. */
  members: CanaryPattern[];
}

export interface CompileOptions {
  /** Match every form in any letter case (DNS names, whose case carries nothing). */
  foldAll?: boolean;
}

/**
 * Every pattern of a canary set, indexed by hashed 4-byte grams for a sampled search: any
 * occurrence of a pattern of length ≥ minLen contains a sampled position every
 * `minLen - GRAM + 1` bytes, so only those positions are looked up.
 */
export class CompiledCanaries {
  readonly canaries: readonly Canary[];
  readonly entries: CanaryPatternEntry[] = [];
  readonly minLen: number;
  readonly maxLen: number;
  readonly gram: number;
  readonly stride: number;
  private readonly heads = new Int32Array(1 << HASH_BITS).fill(-1);
  private readonly next: Int32Array;
  private readonly gramEntry: Int32Array;
  private readonly gramOffset: Int32Array;

  constructor(canaries: readonly Canary[], options: CompileOptions = {}) {
    this.canaries = canaries.map((c) => ({ ...c }));
    const byKey = new Map<string, CanaryPatternEntry>();
    canaries.forEach((c, canary) => {
      for (const p of canaryPatterns(c.value)) {
        const pattern = options.foldAll ? { ...p, caseless: true } : p;
        const folded = Uint8Array.from(pattern.bytes, (b) => FOLD[b] ?? b);
        const key = `${canary}:${Buffer.from(folded).toString('hex')}`;
        const entry = byKey.get(key);
        if (entry) entry.members.push(pattern);
        else byKey.set(key, { canary, folded, members: [pattern] });
      }
    });
    this.entries = [...byKey.values()];
    const lengths = this.entries.map((e) => e.folded.length);
    this.minLen = lengths.length > 0 ? Math.min(...lengths) : 0;
    this.maxLen = lengths.length > 0 ? Math.max(...lengths) : 0;
    this.gram = Math.min(GRAM, this.minLen);
    this.stride = Math.max(1, this.minLen - this.gram + 1);
    const grams: [number, number, number][] = [];
    this.entries.forEach((e, index) => {
      for (let j = 0; j + this.gram <= this.minLen; j++) grams.push([this.hashAt(e.folded, j, false), index, j]);
    });
    this.next = new Int32Array(grams.length);
    this.gramEntry = new Int32Array(grams.length);
    this.gramOffset = new Int32Array(grams.length);
    grams.forEach(([h, index, j], k) => {
      this.gramEntry[k] = index;
      this.gramOffset[k] = j;
      this.next[k] = this.heads[h] ?? -1;
      this.heads[h] = k;
    });
  }

  private hashAt(buf: Uint8Array, i: number, fold: boolean): number {
    let g = 0;
    for (let k = 0; k < this.gram; k++) {
      const b = buf[i + k] ?? 0;
      g |= (fold ? (FOLD[b] ?? b) : b) << (8 * k);
    }
    return Math.imul(g, 0x9e3779b1) >>> (32 - HASH_BITS);
  }

  /**
   * Calls `onHit` for every pattern occurrence lying wholly inside `buf` (the same hit may repeat);
   * entries whose index is set in `done` are not checked.
   */
  search(buf: Uint8Array, done: Uint8Array, onHit: (entryIndex: number, form: CanaryForm, at: number) => void): void {
    if (this.entries.length === 0) return;
    const len = buf.length;
    for (let i = 0; i + this.gram <= len; i += this.stride) {
      for (let k = this.heads[this.hashAt(buf, i, true)] ?? -1; k >= 0; k = this.next[k] ?? -1) {
        const index = this.gramEntry[k] ?? 0;
        const entry = this.entries[index];
        const t = i - (this.gramOffset[k] ?? 0);
        if (entry === undefined || done[index] === 1 || t < 0 || t + entry.folded.length > len) continue;
        const form = matchAt(entry, buf, t);
        if (form !== undefined) onHit(index, form, t);
      }
    }
  }
}

function matchAt(entry: CanaryPatternEntry, buf: Uint8Array, t: number): CanaryForm | undefined {
  const { folded } = entry;
  for (let k = 0; k < folded.length; k++) {
    const b = buf[t + k] ?? 0;
    if ((FOLD[b] ?? b) !== folded[k]) return undefined;
  }
  const exact = entry.members.find((m) => m.bytes.equals(buf.subarray(t, t + m.bytes.length)));
  return (exact ?? entry.members.find((m) => m.caseless))?.form;
}

const compiledCache = new Map<string, CompiledCanaries>();

/** Compiles (and caches the last few) canary sets; an already compiled set is returned as it is. */
export function compileCanaries(canaries: readonly Canary[] | CompiledCanaries, options: CompileOptions = {}): CompiledCanaries {
  if (canaries instanceof CompiledCanaries) return canaries;
  const key = `${options.foldAll ? 'i' : 'x'}${JSON.stringify(canaries.map((c) => [c.label, c.value]))}`;
  let compiled = compiledCache.get(key);
  if (compiled === undefined) {
    compiled = new CompiledCanaries(canaries, options);
    if (compiledCache.size >= 8) compiledCache.delete(compiledCache.keys().next().value ?? '');
    compiledCache.set(key, compiled);
  }
  return compiled;
}

type OnHit = (index: number, form: CanaryForm, offset: number) => void;

/** One searched stream: the carry of its last bytes lets a pattern straddle writes. */
class PatternStream {
  private carry: Buffer = Buffer.alloc(0);
  total = 0;
  private readonly overlap: number;

  constructor(
    private readonly compiled: CompiledCanaries,
    readonly done: Uint8Array,
  ) {
    this.overlap = Math.max(0, compiled.maxLen - 1);
  }

  write(buf: Buffer, onHit: OnHit): void {
    if (buf.length === 0) return;
    if (this.carry.length > 0) {
      // Occurrences that start in the carry and end in this chunk; the rest lie wholly in one of them.
      const seam = Buffer.concat([this.carry, buf.subarray(0, this.overlap)]);
      const base = this.total - this.carry.length;
      this.compiled.search(seam, this.done, (i, form, at) => onHit(i, form, base + at));
    }
    const base = this.total;
    this.compiled.search(buf, this.done, (i, form, at) => onHit(i, form, base + at));
    this.total += buf.length;
    this.carry =
      buf.length >= this.overlap ? Buffer.from(buf.subarray(buf.length - this.overlap)) : Buffer.from(Buffer.concat([this.carry, buf]).subarray(-this.overlap));
  }
}

/** `buf` without CR and LF bytes (the same buffer when it has none). */
function withoutLineBreaks(buf: Buffer): Buffer {
  let lf = buf.indexOf(0x0a);
  let cr = buf.indexOf(0x0d);
  if (lf < 0 && cr < 0) return buf;
  const out = Buffer.allocUnsafe(buf.length);
  let n = 0;
  let pos = 0;
  for (;;) {
    const next = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
    if (next < 0) break;
    n += buf.copy(out, n, pos, next);
    pos = next + 1;
    if (lf >= 0 && lf < pos) lf = buf.indexOf(0x0a, pos);
    if (cr >= 0 && cr < pos) cr = buf.indexOf(0x0d, pos);
  }
  n += buf.copy(out, n, pos);
  return out.subarray(0, n);
}

export interface ScannerOptions extends CompileOptions {
  /**
   * Also search the stream with its CR and LF bytes removed (a value printed over several lines, base64
   * wrapped at 76 columns); such hits carry `acrossLines` and an offset in that stripped stream.
   */
  acrossLines?: boolean;
}

/**
 * Finds canaries in any form in an unbounded stream. Memory: the longest pattern (carried across
 * chunk boundaries) plus one hit per canary and form; each (canary, form) is reported once.
 */
export class CanaryScanner {
  private readonly compiled: CompiledCanaries;
  private readonly raw: PatternStream;
  private readonly joined: PatternStream | undefined;
  private readonly found = new Map<string, CanaryHit>();

  constructor(canaries: readonly Canary[] | CompiledCanaries, options: ScannerOptions = {}) {
    this.compiled = compileCanaries(canaries, options);
    // Per compiled entry: 1 once every form it can name was found, so it is no longer checked.
    this.raw = new PatternStream(this.compiled, new Uint8Array(this.compiled.entries.length));
    if (options.acrossLines) this.joined = new PatternStream(this.compiled, new Uint8Array(this.compiled.entries.length));
  }

  write(chunk: Uint8Array): void {
    if (chunk.length === 0 || this.compiled.entries.length === 0) return;
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const { raw, joined } = this;
    raw.write(buf, (index, form, offset) => this.record(raw, index, form, offset, false));
    joined?.write(withoutLineBreaks(buf), (index, form, offset) => this.record(joined, index, form, offset, true));
  }

  private record(stream: PatternStream, index: number, form: CanaryForm, offset: number, acrossLines: boolean): void {
    const entry = this.compiled.entries[index];
    const canary = entry === undefined ? undefined : this.compiled.canaries[entry.canary];
    if (entry === undefined || canary === undefined) return;
    const key = (f: CanaryForm, lines: boolean): string => `${entry.canary}:${f}${lines ? ':lines' : ''}`;
    // A hit across lines counts only where the raw stream has none of that form.
    if (!this.found.has(key(form, false)) && !this.found.has(key(form, acrossLines))) {
      this.found.set(key(form, acrossLines), { label: canary.label, value: canary.value, form, offset, ...(acrossLines ? { acrossLines: true } : {}) });
    }
    if (entry.members.every((m) => this.found.has(key(m.form, false)) || this.found.has(key(m.form, acrossLines)))) stream.done[index] = 1;
  }

  get bytes(): number {
    return this.raw.total;
  }

  hits(): CanaryHit[] {
    return [...this.found.values()];
  }
}

/** Every canary, in every form, found in one buffer. */
export function scanBytes(buf: Uint8Array, canaries: readonly Canary[] | CompiledCanaries, options: ScannerOptions = {}): CanaryHit[] {
  const scanner = new CanaryScanner(canaries, options);
  scanner.write(buf);
  return scanner.hits();
}
