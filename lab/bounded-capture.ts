import { createHash, type Hash } from 'node:crypto';
import type { CaptureSummary } from '../model/observation.js';
import { visibleText } from '../core/clean-text.js';
import type { Canary } from './canaries.js';
import { CanaryScanner, type CanaryHit, type CompiledCanaries } from './canary-forms.js';

export interface NeedleHit {
  needle: string;
  /** Byte offset of the first occurrence in the channel. */
  offset: number;
}

export interface BoundedCaptureOptions {
  headBytes?: number;
  tailBytes?: number;
  /** Strings to look for in every byte that passes, without storing the stream (canaries, nonces). */
  needles?: readonly string[];
  /**
   * Canaries to look for in every form (base64, hex, reversed, UTF-16, …) in every byte that
   * passes, also across line breaks.
   */
  canaries?: readonly Canary[] | CompiledCanaries;
  /** Called once, when the first byte arrives. */
  onFirstByte?: () => void;
  /** Called once when the running total first exceeds this many bytes. */
  ceiling?: { bytes: number; onExceeded: () => void };
}

/**
 * Keeps the first and last bytes of a stream, its exact length and sha256, and which needles
 * appeared anywhere in it (and which canaries, in any encoded form); memory stays
 * O(head + tail + longest needle or canary pattern) whatever the payload writes.
 */
export class BoundedCapture {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer = Buffer.alloc(0);
  private total = 0;
  private readonly hash: Hash = createHash('sha256');
  private readonly needles: { text: string; bytes: Buffer }[];
  private readonly overlap: number;
  private carry: Buffer = Buffer.alloc(0);
  private readonly hits = new Map<string, number>();
  private readonly ceiling: BoundedCaptureOptions['ceiling'];
  private ceilingFired = false;
  private digest: string | undefined;
  private readonly onFirstByte: (() => void) | undefined;
  private readonly canaryScanner: CanaryScanner | undefined;

  constructor(options: BoundedCaptureOptions = {}) {
    this.headLimit = options.headBytes ?? 16 * 1024;
    this.tailLimit = options.tailBytes ?? 16 * 1024;
    this.needles = (options.needles ?? []).filter((n) => n.length > 0).map((text) => ({ text, bytes: Buffer.from(text) }));
    this.overlap = Math.max(0, ...this.needles.map((n) => n.bytes.length - 1));
    this.ceiling = options.ceiling;
    this.onFirstByte = options.onFirstByte;
    this.canaryScanner = options.canaries !== undefined ? new CanaryScanner(options.canaries, { acrossLines: true }) : undefined;
  }

  write(chunk: Uint8Array): void {
    if (this.digest !== undefined) return;
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.total === 0 && buf.length > 0) this.onFirstByte?.();
    this.scan(buf);
    this.canaryScanner?.write(buf);
    this.hash.update(buf);
    if (this.headLen < this.headLimit) {
      const take = buf.subarray(0, this.headLimit - this.headLen);
      this.head.push(Buffer.from(take));
      this.headLen += take.length;
    }
    this.tail =
      buf.length >= this.tailLimit ? Buffer.from(buf.subarray(buf.length - this.tailLimit)) : Buffer.concat([this.tail, buf]).subarray(-this.tailLimit);
    this.total += buf.length;
    if (this.ceiling && !this.ceilingFired && this.total > this.ceiling.bytes) {
      this.ceilingFired = true;
      this.ceiling.onExceeded();
    }
  }

  private scan(buf: Buffer): void {
    if (this.needles.length === 0) return;
    const window = this.carry.length > 0 ? Buffer.concat([this.carry, buf]) : buf;
    const windowStart = this.total - this.carry.length;
    for (const n of this.needles) {
      if (this.hits.has(n.text)) continue;
      const at = window.indexOf(n.bytes);
      if (at >= 0) this.hits.set(n.text, windowStart + at);
    }
    this.carry = Buffer.from(window.subarray(Math.max(0, window.length - this.overlap)));
  }

  get bytes(): number {
    return this.total;
  }

  get headBuffer(): Buffer {
    return Buffer.concat(this.head);
  }

  found(): NeedleHit[] {
    return [...this.hits.entries()].map(([needle, offset]) => ({ needle, offset }));
  }

  has(needle: string): boolean {
    return this.hits.has(needle);
  }

  /** Canaries seen in any form, once per (canary, form), with the offset of an occurrence. */
  canaryHits(): CanaryHit[] {
    return this.canaryScanner?.hits() ?? [];
  }

  /** The kept bytes as [head, tail] without overlap, as in summary(): the input of scanJoined. */
  keptParts(): [Buffer, Buffer] {
    const head = this.headBuffer;
    const tail = this.total > head.length ? this.tail.subarray(Math.max(0, this.tail.length - (this.total - head.length))) : Buffer.alloc(0);
    return [head, tail];
  }

  summary(): CaptureSummary {
    this.digest ??= this.hash.digest('hex');
    const [head, tail] = this.keptParts();
    const truncated = this.total > head.length;
    return {
      bytes: this.total,
      sha256: this.digest,
      truncated,
      headBase64: head.toString('base64'),
      tailBase64: tail.toString('base64'),
      preview: visibleText(head.subarray(0, 2048).toString('utf8')),
    };
  }
}
