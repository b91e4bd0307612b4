/**
 * The newest records, bounded by count and by bytes. Evicting the oldest keeps every later window
 * whole; `lastEvictedMs` tells a window that began before it that it lost records.
 */
export class BoundedRing<T> {
  #items: { item: T; time: number; bytes: number }[] = [];
  #bytes = 0;
  #evicted = 0;
  #lastEvictedMs: number | undefined;

  constructor(
    readonly maxItems: number,
    readonly maxBytes: number,
  ) {}

  push(item: T, time: number, bytes: number): void {
    this.#items.push({ item, time, bytes });
    this.#bytes += bytes;
    if (this.#items.length <= this.maxItems && this.#bytes <= this.maxBytes) return;
    // Evict a tenth at a time so pushing stays O(1) on average.
    let drop = Math.max(1, Math.floor(this.maxItems / 10));
    while (this.#bytes - this.#sizeOf(drop) > this.maxBytes && drop < this.#items.length) drop += Math.max(1, Math.floor(this.maxItems / 10));
    drop = Math.min(drop, this.#items.length);
    const gone = this.#items.slice(0, drop);
    this.#items = this.#items.slice(drop);
    for (const g of gone) {
      this.#bytes -= g.bytes;
      this.#lastEvictedMs = Math.max(this.#lastEvictedMs ?? g.time, g.time);
    }
    this.#evicted += gone.length;
  }

  #sizeOf(n: number): number {
    let total = 0;
    for (let i = 0; i < n && i < this.#items.length; i += 1) total += this.#items[i]?.bytes ?? 0;
    return total;
  }

  between(fromMs: number, toMs: number): T[] {
    return this.#items.filter((e) => e.time >= fromMs && e.time <= toMs).map((e) => e.item);
  }

  get size(): number {
    return this.#items.length;
  }

  /** Records thrown away so far. */
  get evicted(): number {
    return this.#evicted;
  }

  get lastEvictedMs(): number | undefined {
    return this.#lastEvictedMs;
  }
}
