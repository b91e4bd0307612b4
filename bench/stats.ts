/** Summaries of repeated timings: min/median/max and n, and ratios of paired rounds. */

export interface Summary {
  n: number;
  min: number;
  median: number;
  max: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export function summarize(xs: readonly number[]): Summary {
  if (xs.length === 0) return { n: 0, min: Number.NaN, median: Number.NaN, max: Number.NaN };
  return { n: xs.length, min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
}

/** Round i of `num` over round i of `den` (both measured back to back in the same round). */
export function pairedRatios(num: readonly number[], den: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(num.length, den.length); i++) {
    const a = num[i];
    const b = den[i];
    if (a !== undefined && b !== undefined && b > 0) out.push(a / b);
  }
  return out;
}

export const round1 = (x: number): number => Math.round(x * 10) / 10;
export const round2 = (x: number): number => Math.round(x * 100) / 100;

export function fmtMs(s: Summary): string {
  if (s.n === 0) return '–';
  return `${Math.round(s.median)} ms [${Math.round(s.min)}–${Math.round(s.max)}] n=${s.n}`;
}

export function fmtRatio(s: Summary): string {
  if (s.n === 0) return '–';
  return `${s.median.toFixed(2)}× [${s.min.toFixed(2)}–${s.max.toFixed(2)}] n=${s.n}`;
}
