import { createHash, randomBytes } from 'node:crypto';
import type { PutFile } from '../../../model/backend-contract.js';
import type { ProbeContext } from '../../../model/probe.js';

/** Deterministic numbers from a recorded seed: sha256(seed:label:counter), so a run can be replayed exactly. */
export class SeededRng {
  private counter = 0;
  constructor(
    readonly seed: string,
    private readonly label: string,
  ) {}

  /** Uniform in [0, 1). */
  next(): number {
    const h = createHash('sha256').update(`${this.seed}:${this.label}:${this.counter++}`).digest();
    return h.readUInt32BE(0) / 2 ** 32;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  hex(bytes: number): string {
    return Array.from({ length: bytes }, () => this.int(0, 255).toString(16).padStart(2, '0')).join('');
  }
}

/** One input a program is run on, and what a right answer for it is (read by the case's predicate). */
export interface InputVariant<E = unknown> {
  /** "visible" or "hidden-N"; never the hidden content itself. */
  label: string;
  files: PutFile[];
  stdin?: Uint8Array;
  expected: E;
}

/**
 * Metamorphic inputs: variant 0 is the visible input (fixed, the one a program author sees); variants
 * 1..hidden are generated per run from a recorded seed. The same program must be right on all of them.
 */
export interface HiddenInputs<E = unknown> {
  hidden: number;
  variant(index: number, rng: SeededRng, ctx: ProbeContext): InputVariant<E>;
}

/** The context a task predicate gets while the loop judges one input variant. */
export interface InputContext<E = unknown> extends ProbeContext {
  input: InputVariant<E>;
}

export const withInput = <E>(ctx: ProbeContext, input: InputVariant<E>): InputContext<E> => ({ ...ctx, input });

/** The variant being judged, or undefined when the case has no input variants. */
export function inputOf<E>(ctx: ProbeContext): InputVariant<E> | undefined {
  return 'input' in ctx ? (ctx as InputContext<E>).input : undefined;
}

/** A per-run seed; SANDCHECK_TASK_SEED replays a recorded one. */
export function taskSeed(caseId: string, fixed: string | undefined = process.env['SANDCHECK_TASK_SEED']): string {
  if (fixed && /^[0-9a-f]{8,64}$/.test(fixed)) return createHash('sha256').update(`${fixed}:${caseId}`).digest('hex').slice(0, 16);
  return randomBytes(8).toString('hex');
}

export function inputVariants<E>(inputs: HiddenInputs<E>, seed: string, ctx: ProbeContext): InputVariant<E>[] {
  return Array.from({ length: 1 + inputs.hidden }, (_, i) => inputs.variant(i, new SeededRng(seed, `variant-${i}`), ctx));
}
