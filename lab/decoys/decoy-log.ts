import { z } from 'zod';
import { DecoyWaitTimeoutError } from './errors.js';

/** Most bytes of a contact's payload kept in an event. */
export const MAX_PAYLOAD_BYTES = 4096;
/** Most question names of one DNS message kept in an event. */
export const MAX_DNS_NAMES = 16;
/** Base64 length of MAX_PAYLOAD_BYTES. */
const MAX_PAYLOAD_BASE64 = Math.ceil(MAX_PAYLOAD_BYTES / 3) * 4;

export const DECOY_SERVICES = ['metadata', 'dns', 'canary-http', 'catch-all-tcp', 'catch-all-udp', 'front'] as const;
export type DecoyService = (typeof DECOY_SERVICES)[number];

export const EndpointSchema = z.object({
  address: z.string().min(1),
  port: z.number().int().min(0).max(65535),
});
export type Endpoint = z.infer<typeof EndpointSchema>;

export const DecoyEventSchema = z.object({
  time: z.iso.datetime(),
  service: z.enum(DECOY_SERVICES),
  proto: z.enum(['tcp', 'udp']),
  /** The address the client dialled (for a wildcard UDP listener: the bound address, see detail). */
  local: EndpointSchema,
  peer: EndpointSchema,
  /** One line, e.g. `GET /latest/meta-data/` or `A? x.exfil.example.` */
  summary: z.string().max(512).regex(/^[^\r\n]*$/),
  /** The first MAX_PAYLOAD_BYTES of what the client sent (TCP stream, UDP datagram, DNS message). */
  payloadBase64: z.base64().max(MAX_PAYLOAD_BASE64),
  /** HTTP requests: the first MAX_PAYLOAD_BYTES of the request body (after the head). */
  bodyBase64: z.base64().max(MAX_PAYLOAD_BASE64).optional(),
  /** DNS: every question name (at most MAX_DNS_NAMES), without the trailing dot. */
  dnsNames: z.array(z.string().max(255)).max(MAX_DNS_NAMES).optional(),
  detail: z.record(z.string(), z.string()).optional(),
});
export type DecoyEvent = z.infer<typeof DecoyEventSchema>;

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
    this.#onListenerError =
      options.onListenerError ??
      ((error) => process.emitWarning(`decoy log subscriber threw: ${String(error)}`, 'DecoyLogWarning'));
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
