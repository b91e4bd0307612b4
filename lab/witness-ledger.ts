import type { WitnessHealth } from './witness-health.js';

/** One proof-of-life: the harness's own marked packet or query, and whether every witness saw it. */
export interface WitnessProof {
  /** The marker (a DNS name in the lab, a UDP payload under --live-network). */
  readonly marker: string;
  readonly sentMs: number;
  readonly doneMs: number;
  readonly ok: boolean;
  readonly notes: readonly string[];
}

interface DropSample {
  readonly time: number;
  /** Cumulative losses of every witness counter at `time`. */
  readonly drops: number;
}

const MAX_SAMPLES = 10_000;

/** Proofs of life and cumulative drop counters over a run, and the health of any window from them. */
export class WitnessLedger {
  readonly #samples: DropSample[] = [];
  readonly #proofs: WitnessProof[] = [];

  constructor(readonly scope: WitnessHealth['scope']) {}

  sample(time: number, drops: number): void {
    this.#samples.push({ time, drops });
    if (this.#samples.length > MAX_SAMPLES) this.#samples.splice(0, MAX_SAMPLES / 10);
  }

  proof(proof: WitnessProof): void {
    this.#proofs.push(proof);
    if (this.#proofs.length > MAX_SAMPLES) this.#proofs.splice(0, MAX_SAMPLES / 10);
  }

  /**
   * `lastEvicted`: for each bounded store, the time of its newest record that was thrown away (a window that
   * began at or before it lost records).
   */
  health(fromMs: number, toMs: number, lastEvicted: readonly { store: string; ms: number | undefined }[]): WitnessHealth {
    const notes: string[] = [];
    let saturated = false;
    for (const { store, ms } of lastEvicted) {
      if (ms !== undefined && ms >= fromMs) {
        saturated = true;
        notes.push(`the ${store} was full and dropped records up to ${new Date(ms).toISOString()}`);
      }
    }
    const before = this.#samples.filter((s) => s.time <= fromMs).at(-1) ?? this.#samples[0];
    const after = this.#samples.filter((s) => s.time > fromMs && s.time <= toMs).at(-1);
    let dropped = 0;
    if (before !== undefined && after !== undefined) {
      dropped = Math.max(0, after.drops - before.drops);
      if (dropped > 0) notes.push(`${dropped} packets lost by the capture or a decoy socket (kernel counters)`);
    } else notes.push('no drop counters were read after the window opened');
    const proofs = this.#proofs.filter((p) => p.sentMs >= fromMs && p.doneMs <= toMs);
    const proofOfLife = proofs.some((p) => p.ok);
    if (proofs.length === 0) notes.push('no proof of life was sent in this window');
    else if (!proofOfLife) notes.push(...(proofs.at(-1)?.notes ?? []));
    return { saturated, dropped, proofOfLife, scope: this.scope, notes };
  }
}
