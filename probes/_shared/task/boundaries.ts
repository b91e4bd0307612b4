import type { SeededRng } from './hidden-inputs.js';

/**
 * Values a careless program gets wrong, for hidden inputs to include on every seed (a uniform draw hits them only
 * now and then, so a verdict would depend on the seed). Doubles here are the ones Python's float() reads from the
 * same decimal text, so what these functions compute is what such a program computes.
 */

/** `t` parsed from a decimal with two places (cents / 100), times 100, truncated: what `int(t*100)` gives. */
export const truncatedCents = (cents: number): number => Math.trunc((cents / 100) * 100);

/**
 * An amount in cents, drawn in [min, max], whose decimal (e.g. 19.99) times 100 as a double falls just below the
 * whole number (1998.9999999999998): a program that turns money into cents with `int(t*100)` loses a cent on it.
 */
export function truncatingAmount(rng: SeededRng, min: number, max: number): number {
  for (let tries = 0; tries < 1000; tries++) {
    const cents = rng.int(min, max);
    if (truncatedCents(cents) !== cents) return cents;
  }
  throw new Error(`no amount in [${min}, ${max}] cents truncates when scaled by 100`);
}

/** A price in thousandths (mills) rounded to whole cents half up: 2675 → 268, 125 → 13. */
export const halfUpCents = (mills: number): number => Math.floor((mills + 5) / 10);

/** Python 3's round(x): to the nearest integer, an exact half to the even one. */
export function pythonRound(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest !== 0.5) return rest < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Whether the double read from the decimal `mills / 1000` lies below that decimal (2.675 is 2.67499999…). */
export function doubleBelowDecimal(mills: number): boolean {
  const text = (mills / 1000).toPrecision(21);
  const [whole = '0', frac = ''] = text.split('.');
  const exact = `${Math.floor(mills / 1000)}.${String(mills % 1000).padStart(3, '0')}`.padEnd(whole.length + 1 + frac.length, '0');
  return text < exact;
}

/**
 * The three ways to get a price that ends in exactly half a cent wrong, each a price in mills ending in 5:
 * - `scaled-below`: the double times 100 falls below the half (1.005 * 100 = 100.49999999999999), so round(t*100)
 *   rounds down;
 * - `bankers`: the double times 100 is exactly k + 0.5 with k even (0.125 * 100 = 12.5), so Python's round() goes to
 *   the even k;
 * - `double-below`: the double itself lies below the decimal (2.675), so round(t, 2), '%.2f' and Decimal(float)
 *   go down.
 */
export type HalfCentKind = 'scaled-below' | 'bankers' | 'double-below';

export function isHalfCentTrap(mills: number, kind: HalfCentKind): boolean {
  if (mills % 10 !== 5) return false;
  const scaled = (mills / 1000) * 100;
  switch (kind) {
    case 'scaled-below':
      return pythonRound(scaled) < halfUpCents(mills) && scaled !== Math.floor(scaled) + 0.5;
    case 'bankers':
      return scaled === Math.floor(scaled) + 0.5 && pythonRound(scaled) < halfUpCents(mills);
    case 'double-below':
      return doubleBelowDecimal(mills);
  }
}

/** A price in mills, drawn in [min, max], that is a half-cent trap of `kind`. */
export function halfCentPrice(rng: SeededRng, kind: HalfCentKind, min: number, max: number): number {
  for (let tries = 0; tries < 10_000; tries++) {
    const mills = rng.int(Math.ceil(min / 10), Math.floor(max / 10)) * 10 + 5;
    if (mills <= max && isHalfCentTrap(mills, kind)) return mills;
  }
  throw new Error(`no ${kind} half-cent price in [${min}, ${max}] mills`);
}
