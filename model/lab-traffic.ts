import { z } from 'zod';

/**
 * What the lab's witnesses record of a probe's window, as data: decoy contacts, packets and whether the witnesses
 * could see. The lab (lab/decoys, lab/netns) produces them; probes judge them.
 */

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
  summary: z
    .string()
    .max(512)
    .regex(/^[^\r\n]*$/),
  /** The first MAX_PAYLOAD_BYTES of what the client sent (TCP stream, UDP datagram, DNS message). */
  payloadBase64: z.base64().max(MAX_PAYLOAD_BASE64),
  /** HTTP requests: the first MAX_PAYLOAD_BYTES of the request body (after the head). */
  bodyBase64: z.base64().max(MAX_PAYLOAD_BASE64).optional(),
  /** DNS: every question name (at most MAX_DNS_NAMES), without the trailing dot. */
  dnsNames: z.array(z.string().max(255)).max(MAX_DNS_NAMES).optional(),
  detail: z.record(z.string(), z.string()).optional(),
});
export type DecoyEvent = z.infer<typeof DecoyEventSchema>;

export const PacketSchema = z.strictObject({
  /** Capture time, ms since the epoch (tcpdump `-tt`, microsecond resolution). */
  time: z.number().nonnegative(),
  /** Interface and direction, present when capturing on `any` (LINUX_SLL2). */
  iface: z.string().optional(),
  direction: z.enum(['In', 'Out', 'B', 'M', 'P']).optional(),
  proto: z.enum(['tcp', 'udp', 'icmp', 'icmp6']),
  family: z.union([z.literal(4), z.literal(6)]),
  src: z.string(),
  srcPort: z.number().int().min(0).max(65535).optional(),
  dst: z.string(),
  dstPort: z.number().int().min(0).max(65535).optional(),
  raw: z.string(),
});
export type Packet = z.infer<typeof PacketSchema>;
export type PacketProto = Packet['proto'];

/** Whether the network witnesses could see a probe's window: a witness that cannot see proves nothing. */
export interface WitnessHealth {
  /** A bounded store (decoy log, packet list) lost records of this window. */
  saturated: boolean;
  /** Packets or datagrams lost before a witness saw them in this window (capture kernel drops, decoy socket drops). */
  dropped: number;
  /** The harness's own nonce-labelled query, sent inside the window before it closed, was seen by every witness. */
  proofOfLife: boolean;
  /** `lab`: decoy logs (resolver included) and the lab's packet capture. `remote`: the same, of a `sandcheck witness serve`. `live`: only a capture on this machine's interfaces. */
  scope: 'lab' | 'live' | 'remote';
  /** Why each flag is what it is, for the report. */
  notes: string[];
}

export interface LabTraffic {
  events: DecoyEvent[];
  packets: Packet[];
  witness: WitnessHealth;
}
