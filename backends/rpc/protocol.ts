import { z } from 'zod';
import { POLICY_ITEMS } from '../../model/backend-contract.js';

/**
 * sandcheck's language-neutral adapter protocol (`--backend rpc:<command>`), version 1: JSON lines over
 * the adapter process's stdin (requests) and stdout (responses and output events). These schemas are
 * its single source of truth; reports/schema/rpc-protocol.schema.json is generated from them and
 * docs/rpc-protocol.md explains them. Binary data travels as base64.
 */
export const RPC_PROTOCOL_VERSION = 1;

/** One line may carry at most this much (a get of several files at maxBytesPerFile, base64). */
export const MAX_LINE_BYTES = 64 * 2 ** 20;

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, { error: 'expected base64' });
const Tristate = z.union([z.boolean(), z.literal('unknown')]);
const PolicyItem = z.enum(POLICY_ITEMS);
const Counter = z.number().int().min(0);

export const RPC_METHODS = ['hello', 'capabilities', 'preflight', 'create', 'put', 'exec', 'abort', 'get', 'hostPids', 'destroy', 'shutdown'] as const;
export type RpcMethod = (typeof RPC_METHODS)[number];

export const RpcRequestSchema = z.strictObject({
  id: z.number().int().min(1),
  method: z.enum(RPC_METHODS),
  params: z.record(z.string(), z.unknown()),
});
export type RpcRequest = z.infer<typeof RpcRequestSchema>;

export const RpcErrorSchema = z.strictObject({
  /** BACKEND_UNAVAILABLE (cannot run here: the run stops with the hint), CONFIG_INVALID (bad options), or any other code of the adapter's. */
  code: z.string().min(1).max(64),
  message: z.string().max(4096),
  hint: z.string().max(4096).optional(),
});

/** What the adapter writes on stdout: a response to one request, or an event. Anything else is a protocol error. */
export const RpcLineSchema = z.union([
  z.strictObject({ id: z.number().int().min(1), result: z.unknown() }),
  z.strictObject({ id: z.number().int().min(1), error: RpcErrorSchema }),
  z.strictObject({ event: z.literal('output'), execId: z.string().min(1).max(128), stream: z.enum(['stdout', 'stderr']), data: Base64 }),
  z.strictObject({ event: z.literal('log'), message: z.string().max(4096) }),
]);
export type RpcLine = z.infer<typeof RpcLineSchema>;

export const HelloResultSchema = z.strictObject({
  protocol: z.literal(RPC_PROTOCOL_VERSION),
  name: z.string().min(1).max(64),
  description: z.string().max(512),
  /** Optional methods the adapter implements. */
  features: z.array(z.enum(['hostPids'])).default([]),
});
export type HelloResult = z.infer<typeof HelloResultSchema>;

export const CapabilitiesResultSchema = z.strictObject({
  isolation: z.enum(['none', 'sandbox']),
  enforces: z.array(PolicyItem),
  notEnforcedReasons: z.partialRecord(PolicyItem, z.string().max(1024)).optional(),
  notObservable: z.partialRecord(PolicyItem, z.string().max(1024)).optional(),
  /** `remote`: the boxes' network is not on this machine; only a `sandcheck witness serve` they reach judges it. */
  boxNetwork: z.enum(['lab', 'remote']).optional(),
  /** Set when the box cannot write files sandcheck reads back (a read-only sandbox): why (docs/adapters.md). */
  noWrittenResults: z.string().min(1).max(1024).optional(),
});

export const CreateResultSchema = z.strictObject({
  envId: z.string().min(1).max(128),
  hostWorkspace: z.string().min(1).max(4096).optional(),
});

export const ResourcesSchema = z.strictObject({
  source: z.string().min(1).max(512),
  memoryLimitBytes: Counter.optional(),
  memoryPeakBytes: Counter.optional(),
  memoryFailcnt: Counter.optional(),
  oomKills: Counter.optional(),
  pidsLimit: Counter.optional(),
  pidsPeak: Counter.optional(),
  pidsMaxEvents: Counter.optional(),
  cpuQuotaCores: z.number().min(0).optional(),
  cpuUsageNs: Counter.optional(),
  cpuThrottledPeriods: Counter.optional(),
});

export const ExecResultSchema = z.strictObject({
  exitCode: z.number().int().nullable(),
  signal: z.string().max(32).nullable(),
  startError: z.string().max(4096).optional(),
  timedOut: Tristate,
  oomKilled: Tristate,
  outputTruncated: Tristate,
  resources: ResourcesSchema.optional(),
});

export const GotFileSchema = z.strictObject({
  path: z.string().max(4096),
  kind: z.enum(['file', 'directory', 'symlink', 'hardlink', 'fifo', 'socket', 'device', 'other', 'missing']),
  data: Base64.optional(),
  size: Counter,
  linkTarget: z.string().max(4096).optional(),
  nlink: Counter.optional(),
  note: z.string().max(1024).optional(),
});

export const GetResultSchema = z.strictObject({ files: z.array(GotFileSchema) });
export const HostPidsResultSchema = z.strictObject({ pids: z.array(z.number().int().positive()).max(65_536) });
export const DestroyResultSchema = z.strictObject({ leftovers: z.array(z.string().max(1024)).max(1000) });
export const EmptyResultSchema = z.looseObject({});

/** The params each method gets (documentation and the generated JSON Schema; the adapter validates its own way). */
export const RPC_PARAMS = {
  hello: z.strictObject({ protocol: z.literal(RPC_PROTOCOL_VERSION), options: z.unknown() }),
  capabilities: z.strictObject({ policy: z.record(z.string(), z.unknown()) }),
  preflight: z.strictObject({}),
  create: z.strictObject({
    policy: z.record(z.string(), z.unknown()),
    runId: z.string(),
    /** Present when the run has a lab: a local adapter runs the box inside it (`nsenter --net=<netnsPath>`). */
    lab: z.strictObject({ netnsPath: z.string(), resolvConfPath: z.string() }).nullable(),
  }),
  put: z.strictObject({
    envId: z.string(),
    files: z.array(z.strictObject({ path: z.string(), data: Base64, mode: z.number().int().optional(), readOnly: z.boolean().optional() })),
  }),
  exec: z.strictObject({
    envId: z.string(),
    execId: z.string(),
    argv: z.array(z.string()).min(1),
    stdin: Base64.optional(),
    env: z.record(z.string(), z.string()),
    cwd: z.string().optional(),
    timeoutMs: z.number().int().positive(),
    maxOutputBytes: z.number().int().positive(),
  }),
  abort: z.strictObject({ execId: z.string() }),
  get: z.strictObject({ envId: z.string(), paths: z.array(z.string()), maxBytesPerFile: z.number().int().min(0) }),
  hostPids: z.strictObject({ envId: z.string() }),
  destroy: z.strictObject({ envId: z.string() }),
  shutdown: z.strictObject({}),
} as const satisfies Record<RpcMethod, z.ZodType>;

/** reports/schema/rpc-protocol.schema.json: every message of the protocol, for adapter authors in any language. */
export function rpcProtocolJsonSchemas(): Record<string, unknown> {
  const json = (s: z.ZodType): unknown => z.toJSONSchema(s, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
  return {
    'rpc-protocol.schema.json': {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: `sandcheck rpc adapter protocol v${RPC_PROTOCOL_VERSION}`,
      description: 'JSON lines: requests on the adapter stdin, responses and events on its stdout. See docs/rpc-protocol.md.',
      $defs: {
        request: json(RpcRequestSchema),
        line: json(RpcLineSchema),
        params: Object.fromEntries(Object.entries(RPC_PARAMS).map(([m, s]) => [m, json(s)])),
        results: {
          hello: json(HelloResultSchema),
          capabilities: json(CapabilitiesResultSchema),
          create: json(CreateResultSchema),
          exec: json(ExecResultSchema),
          get: json(GetResultSchema),
          hostPids: json(HostPidsResultSchema),
          destroy: json(DestroyResultSchema),
        },
      },
    },
  };
}
