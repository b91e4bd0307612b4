import { z } from 'zod';
import { DEFAULT_MAX_EVENTS } from './decoy-log.js';
import { canonicalIp } from './decoy-event.js';
import type { DnsAnswers } from './dns-answer.js';
import { LabConfigError, formatHostPort } from './errors.js';
import { LAB_ALLOWED_HOST, LAB_FRONT, LAB_FRONT_RELAY_SOURCE } from '../netns/addresses.js';
import { ALLOWLIST_NAMES, CANARY_TCP_PORTS, CATCH_ALL_UDP_PORTS, DENIED_NAME_SUFFIX } from './lab-names.js';

const Host = z.union([z.ipv4(), z.ipv6()]);
const Port = z.number().int().min(0).max(65535);
const Canary = z.string().min(1).max(4096);

export const CanariesSchema = z.strictObject({
  accessKeyId: Canary,
  secretAccessKey: Canary,
  token: Canary,
  imdsToken: Canary,
});

export const DnsAnswersSchema = z.strictObject({
  a: z.ipv4(),
  aaaa: z.ipv6(),
  overrides: z.record(z.string().min(1).max(253), z.strictObject({ a: z.ipv4().optional(), aaaa: z.ipv6().optional() })).optional(),
});

const Banner = z.string().min(1).max(1024);

export const LabServiceSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('metadata'), host: Host, port: Port }),
  /** UDP and TCP on the same port. */
  z.strictObject({ kind: z.literal('dns'), host: Host, port: Port, answers: DnsAnswersSchema }),
  z.strictObject({ kind: z.literal('canary-tcp'), host: Host, port: Port, banner: Banner.optional() }),
  z.strictObject({ kind: z.literal('catch-all-udp'), host: Host, port: Port, banner: Banner.optional() }),
  /** A forward proxy that also routes by Host and SNI; onward connections leave from `relaySource`. */
  z.strictObject({ kind: z.literal('front'), host: Host, port: Port, relaySource: Host, answers: DnsAnswersSchema }),
]);

export const LabConfigSchema = z
  .strictObject({
    canaries: CanariesSchema,
    roleName: z
      .string()
      .regex(/^[A-Za-z0-9+=,.@_-]{1,64}$/)
      .default('sandcheck-role'),
    /** Banner of canary TCP listeners that set none. */
    banner: Banner.default('sandcheck-canary'),
    maxEvents: z.number().int().min(0).max(1_000_000).default(DEFAULT_MAX_EVENTS),
    services: z.array(LabServiceSchema).min(1).max(256),
  })
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    config.services.forEach((service, index) => {
      const protos = service.kind === 'dns' ? ['udp', 'tcp'] : service.kind === 'catch-all-udp' ? ['udp'] : ['tcp'];
      for (const proto of protos) {
        if (service.port === 0) continue;
        const key = `${proto} ${formatHostPort(canonicalIp(service.host), service.port)}`;
        if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['services', index], message: `duplicate listener ${key}` });
        seen.add(key);
      }
    });
  });

export type LabConfigInput = z.input<typeof LabConfigSchema>;
export type LabConfig = z.output<typeof LabConfigSchema>;
export type LabServiceConfig = z.output<typeof LabServiceSchema>;

/** Validates a lab configuration; throws LabConfigError listing every problem. */
export function parseLabConfig(input: unknown): LabConfig {
  const result = LabConfigSchema.safeParse(input);
  if (result.success) return result.data;
  throw new LabConfigError(result.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`));
}

/**
 * The addresses the lab's metadata decoy answers on (AWS/GCP/Azure, AWS IPv6, Alibaba, and 169.254.169.254 in the
 * NAT64 well-known and local-use prefixes, which a NAT64 gateway would translate to it).
 */
export const METADATA_HOSTS = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '64:ff9b::a9fe:a9fe', '64:ff9b:1::a9fe:a9fe'] as const;
export const LAB_DNS_HOST = '192.0.2.53';
export { ALLOWLIST_NAMES, CANARY_TCP_PORTS, CATCH_ALL_UDP_PORTS, DENIED_NAME_SUFFIX };

export const DEFAULT_DNS_ANSWERS: DnsAnswers = {
  a: '192.0.2.10',
  aaaa: '2001:db8::10',
  overrides: {
    'metadata.google.internal': { a: '169.254.169.254' },
    'metadata.goog': { a: '169.254.169.254' },
    'instance-data.ec2.internal': { a: '169.254.169.254', aaaa: 'fd00:ec2::254' },
    [ALLOWLIST_NAMES.control]: { a: LAB_ALLOWED_HOST },
    [ALLOWLIST_NAMES.metadata]: { a: '169.254.169.254' },
    [ALLOWLIST_NAMES.loopback]: { a: '127.0.0.1' },
    [ALLOWLIST_NAMES.front]: { a: LAB_FRONT.host },
    // Only an AAAA record, in a form that carries 169.254.169.254.
    [ALLOWLIST_NAMES.nat64]: { aaaa: '64:ff9b::a9fe:a9fe' },
    [ALLOWLIST_NAMES.mapped]: { aaaa: '::ffff:169.254.169.254' },
  },
};

/**
 * The listeners the lab runs inside its namespace, where every address is local: metadata
 * on its well-known addresses, the resolver, wildcard canaries on common TCP ports (they
 * also carry port 80 of the metadata addresses, see `startLabServices`), wildcard UDP.
 */
export function defaultLabServices(answers: DnsAnswers = DEFAULT_DNS_ANSWERS): LabServiceConfig[] {
  const services: LabServiceConfig[] = METADATA_HOSTS.map((host) => ({ kind: 'metadata', host, port: 80 }));
  services.push({ kind: 'dns', host: LAB_DNS_HOST, port: 53, answers: { ...answers } });
  for (const host of ['0.0.0.0', '::']) {
    for (const port of CANARY_TCP_PORTS) services.push({ kind: 'canary-tcp', host, port });
    for (const port of CATCH_ALL_UDP_PORTS) services.push({ kind: 'catch-all-udp', host, port });
  }
  services.push({ kind: 'front', host: LAB_FRONT.host, port: LAB_FRONT.port, relaySource: LAB_FRONT_RELAY_SOURCE, answers: { ...answers } });
  return services;
}
