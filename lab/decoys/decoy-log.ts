import { DecoyWaitTimeoutError } from './errors.js';

export {
  MAX_PAYLOAD_BYTES,
  MAX_DNS_NAMES,
  DECOY_SERVICES,
  EndpointSchema,
  DecoyEventSchema,
  type DecoyService,
  type Endpoint,
  type DecoyEvent,
} from '../../model/lab-traffic.js';
import type { DecoyEvent } from '../../model/lab-traffic.js';

export type DecoyEventListener = (event: DecoyEvent) => void;

export interface DecoyLogOptions {
  /** Events kept in memory; later ones are still delivered to subscribers but not stored. Default 10 000. */
  maxEvents?: number;
  /** Called when a subscriber throws; default: a process warning. A subscriber never breaks a decoy. */
  onListenerError?: (error: unknown) => void;
}

export const DEFAULT_MAX_EVENTS = 10_000;

/**
 * Every contact with a decoy, in arrival order. Storage keeps the *first* `maxEvents`
 * events (the first contact is the evidence; a flood after it adds little) and counts
 * the rest in `dropped`.
 */
export class DecoyLog {
  readonly maxEvents: number;
  readonly #events: DecoyEvent[] = [];
  readonly #listeners = new Set<DecoyEventListener>();
  readonly #onListenerError: (error: unknown) => void;
  #dropped = 0;

  constructor(options: DecoyLogOptions = {}) {
    const max = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    if (!Number.isInteger(max) || max < 0) throw new RangeError(`maxEvents must be a non-negative integer, got ${max}`);
    this.maxEvents = max;
    this.#onListenerError = options.onListenerError ?? ((error) => process.emitWarning(`decoy log subscriber threw: ${String(error)}`, 'DecoyLogWarning'));
  }

  record(event: DecoyEvent): void {
    if (this.#events.length < this.maxEvents) this.#events.push(event);
    else this.#dropped += 1;
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#onListenerError(error);
      }
    }
  }

  /** A copy of the stored events. */
  events(): DecoyEvent[] {
    return [...this.#events];
  }

  /** Events not stored because the bound was reached. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Subscribe to every future event; returns the unsubscribe function. */
  on(type: 'event', listener: DecoyEventListener): () => void {
    if (type !== 'event') throw new TypeError(`unknown decoy log event type: ${String(type)}`);
    this.#listeners.add(listener);
    return () => this.off(type, listener);
  }

  off(_type: 'event', listener: DecoyEventListener): void {
    this.#listeners.delete(listener);
  }

  /** Resolves with the first stored or future event matching `predicate`. */
  waitFor(predicate: (event: DecoyEvent) => boolean, timeoutMs = 5000): Promise<DecoyEvent> {
    const seen = this.#events.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<DecoyEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new DecoyWaitTimeoutError(timeoutMs));
      }, timeoutMs);
      const unsubscribe = this.on('event', (event) => {
        if (!predicate(event)) return;
        clearTimeout(timer);
        unsubscribe();
        resolve(event);
      });
    });
  }
}
