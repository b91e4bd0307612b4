import { z } from 'zod';
import { DecoyEventSchema } from '../decoys/decoy-log.js';
import { PacketSchema } from '../netns/packet.js';

/**
 * `sandcheck witness serve` ↔ `sandcheck run --witness`: a small HTTP API (JSON) over a unix socket or
 * TCP, every request carrying the witness's bearer token. Version 1.
 */
export const WITNESS_PROTOCOL_VERSION = 1;
/** A traffic window's answer is bounded (events and packets are bounded rings on the witness too). */
export const MAX_RESPONSE_BYTES = 96 * 2 ** 20;

export const WitnessInfoSchema = z.strictObject({
  protocol: z.literal(WITNESS_PROTOCOL_VERSION),
  witnessId: z.string().regex(/^[a-z0-9]{1,32}$/),
  /** The witness machine's boot id: the client uses `netnsPath` only on that same machine. */
  bootId: z.string().max(64),
  /** The witness's lab network namespace and resolv.conf, on the witness's machine. */
  netnsPath: z.string().max(4096),
  resolvConfPath: z.string().max(4096),
  /** Decoy credentials the witness's metadata service hands out: a run scans every output for them. */
  canaries: z.array(z.strictObject({ label: z.string().max(128), value: z.string().max(256) })).max(64),
  /** The witness's clock when it answered (ms since epoch), for the client's offset estimate. */
  nowMs: z.number(),
});
export type WitnessInfo = z.infer<typeof WitnessInfoSchema>;

export const WitnessProofSchema = z.strictObject({
  marker: z.string().max(256),
  sentMs: z.number(),
  doneMs: z.number(),
  ok: z.boolean(),
  notes: z.array(z.string().max(2048)).max(64),
});

export const WitnessHealthSchema = z.strictObject({
  saturated: z.boolean(),
  dropped: z.number().int().min(0),
  proofOfLife: z.boolean(),
  scope: z.enum(['lab', 'live', 'remote']),
  notes: z.array(z.string().max(2048)).max(64),
});

export const TrafficSchema = z.strictObject({
  events: z.array(DecoyEventSchema),
  packets: z.array(PacketSchema),
  witness: WitnessHealthSchema,
});

/**
 * What `witness serve --state FILE` writes: everything `run --witness FILE` needs. The file is one the witness
 * created itself (mode 0600, never an existing file or a symlink); the token is sent only as `Authorization: Bearer`.
 */
export const WitnessStateSchema = z.strictObject({
  url: z.string().regex(/^(unix:\/|http:\/\/)/, { error: 'expected unix:/path/to.sock or http://host:port' }),
  token: z.string().regex(/^[\x21-\x7e]{16,128}$/, { error: 'expected 16 to 128 visible ASCII characters' }),
  witnessId: z.string().regex(/^[a-z0-9]{1,32}$/),
  pid: z.number().int().positive(),
});
export type WitnessState = z.infer<typeof WitnessStateSchema>;
