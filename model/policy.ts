import { z } from 'zod';
import { ALLOW_ENTRY_FORMS, parseAllowEntry } from './network-allow.js';

const positiveInt = () =>
  z.number({ error: 'expected a positive integer' }).int({ error: 'expected a positive integer' }).positive({ error: 'expected a positive integer' });
const positiveNumber = () => z.number({ error: 'expected a positive number' }).positive({ error: 'expected a positive number' });
const nonNegativeInt = () =>
  z.number({ error: 'expected an integer ≥ 0' }).int({ error: 'expected an integer ≥ 0' }).min(0, { error: 'expected an integer ≥ 0' });
/** Every number is bounded by what the harness can honour; the message names the bound and why. */
const atMost = <T extends z.ZodNumber>(schema: T, max: number, why: string): T => schema.max(max, { error: `at most ${max}: ${why}` }) as T;

/**
 * Node's timers fire at once past 2^31-1 ms (24.8 days). The longest wait the harness arms is the correction
 * loop's budget, (1 + corrections) × wall + queue/startup: with the bounds below it stays under 1.9 × 10^9 ms.
 */
export const POLICY_BOUNDS = {
  nameLength: 128,
  allowEntries: 256,
  allowEntryLength: 128,
  cpus: 1024,
  memoryMb: 1024 * 1024,
  wallSeconds: 86_400,
  processes: 4_194_304,
  diskMb: 16 * 1024 * 1024,
  maxFiles: 100_000,
  maxMb: 1024 * 1024,
  outputMaxBytes: 256 * 1024 * 1024,
  corrections: 20,
  queueStartupSeconds: 3600,
} as const;
const B = POLICY_BOUNDS;

export const NetworkTarget = z
  .string({ error: `expected an entry such as ${ALLOW_ENTRY_FORMS}` })
  .max(B.allowEntryLength, { error: `expected an entry of at most ${B.allowEntryLength} characters` })
  .superRefine((entry, ctx) => {
    const parsed = parseAllowEntry(entry);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.error });
  })
  .meta({
    description: `One destination the box may reach: protocol, address or prefix, port. Examples: ${ALLOW_ENTRY_FORMS}. A bare address or prefix allows every protocol to it.`,
    pattern: '^(?:(?:tcp|udp|icmp):)?[0-9A-Fa-f.:/\\[\\]]+$',
  });

/** The namespaces a process can have of its own (/proc/<pid>/ns/<name>). */
export const NAMESPACE_NAMES = ['mnt', 'pid', 'net', 'ipc', 'uts', 'user', 'cgroup'] as const;
export type NamespaceName = (typeof NAMESPACE_NAMES)[number];

const HostPathPrefix = z
  .string({ error: 'expected an absolute host path such as /var/lib/mysandbox' })
  .max(512, { error: 'expected a path of at most 512 characters' })
  .regex(/^\/(?:[^\0]*[^/\0])?$/, { error: 'expected an absolute host path without a trailing slash, such as /var/lib/mysandbox' })
  .refine((p) => !p.split('/').includes('..'), { error: 'expected a path without ".." components' });

/** A root the box may write: its workspace, a temp directory of its own, or a host path prefix the policy grants. */
export const WriteRoot = z.union([z.enum(['workspace', 'temp']), HostPathPrefix]).meta({
  description:
    "'workspace' (the box's workspace), 'temp' (a temp directory of the box's own, never the host's shared /tmp), or an absolute host path prefix the box may also write",
});

/** A path inside the workspace, relative to its root (a file or a directory). */
export const WorkspacePath = z
  .string({ error: 'expected a workspace-relative path such as .git/hooks' })
  .min(1)
  .max(256, { error: 'expected a path of at most 256 characters' })
  .regex(/^[^/\0][^\0]*$/, { error: 'expected a path relative to the workspace, without a leading slash' })
  .refine((p) => !p.split('/').some((c) => c === '..' || c === '.' || c === ''), { error: 'expected a path without "..", "." or empty components' });

export { DEFAULT_PROTECTED_PATHS } from './protected-paths.js';

/**
 * A workspace-relative glob of files the box must not read (files.denyRead): `*` and `?` match within one path
 * component, `**` any number of components; an entry without `/` matches a file's name at any depth (`.env`,
 * `*.pem`, `id_*`), one with `/` the whole path from the workspace root (`config/*.key`).
 */
export const DenyReadGlob = z
  .string({ error: 'expected a workspace-relative glob such as .env or *.pem' })
  .min(1)
  .max(256, { error: 'expected a glob of at most 256 characters' })
  .regex(/^[^/\0[\]{}\\][^\0[\]{}\\]*$/, { error: 'expected a workspace-relative glob (*, ? and ** only), without a leading slash' })
  .refine((p) => !p.split('/').some((c) => c === '..' || c === '.' || c === ''), { error: 'expected a glob without "..", "." or empty components' })
  .meta({
    description: 'A workspace-relative glob of files the box must not read: * and ? within a component, ** across; without / it matches a name at any depth',
  });

/**
 * The box's posture as the host reads it from /proc/<pid> of the box's own program (never from the box's word).
 * Optional: a policy without it asks for none of these items.
 */
export const PostureSchema = z.strictObject({
  /** Namespaces every process of the box must have of its own (not the host's, compared with the harness's own). */
  namespaces: z.array(z.enum(NAMESPACE_NAMES)).max(NAMESPACE_NAMES.length),
  /**
   * Host filesystems mounted in the box: `none` = only the runtime's own (read-only system software under
   * /usr, /bin, /sbin, /lib*, the run's own workspace files, the image root and the runtime's per-box files);
   * `{ allow: [...] }` = those plus the listed host path prefixes; `any` = not judged.
   */
  hostMounts: z.union([z.literal('none'), z.literal('any'), z.strictObject({ allow: z.array(HostPathPrefix).max(64, { error: 'at most 64 entries' }) })]),
  /** `required`: every process of the box runs under a seccomp filter (Seccomp mode 2 in /proc/<pid>/status). */
  seccomp: z.enum(['required', 'any']),
  /** `no-dangerous`: no process of the box holds a host-dangerous capability in its bounding set, and none in its ambient set. */
  capabilityBounding: z.enum(['no-dangerous', 'any']),
  /** `none`: no host disk device reachable (no node of one in the box's /dev, no way to make one, or a device cgroup that refuses it). */
  devices: z.enum(['none', 'any']),
});
export type Posture = z.infer<typeof PostureSchema>;

export const PolicySchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(B.nameLength, { error: `expected a name of 1..${B.nameLength} characters` }),
    files: z.strictObject({
      /** Inputs are copied in read-only; the payload may not change them. */
      readOnlyInput: z.boolean(),
      /** Host paths visible inside the box beyond the runtime itself. */
      hostPaths: z.enum(['none']),
      /**
       * The roots the box may write (the agent-sandbox contract): any host file outside them that changes or appears
       * is a crossing. Unset: not asked.
       */
      writeScope: z.array(WriteRoot).min(1).max(64, { error: 'at most 64 entries' }).optional(),
      /**
       * Paths inside the writable workspace that must stay unwritten (persistence: git hooks and config, shell rc
       * files, editor tasks, agent settings); a directory protects everything under it. Unset or empty: not asked.
       */
      protected: z.array(WorkspacePath).max(64, { error: 'at most 64 entries' }).optional(),
      /**
       * Files inside the readable workspace the box must not read (`.env`, `*.pem`, `id_*`): globs, see DenyReadGlob.
       * Unset or empty: not asked.
       */
      denyRead: z.array(DenyReadGlob).max(64, { error: 'at most 64 entries' }).optional(),
    }),
    network: z.strictObject({
      mode: z.enum(['off', 'allowlist']),
      allow: z.array(NetworkTarget).max(B.allowEntries, { error: `at most ${B.allowEntries} entries` }),
    }),
    resources: z.strictObject({
      cpus: atMost(positiveNumber(), B.cpus, 'more CPUs than any host has'),
      memoryMb: atMost(positiveInt(), B.memoryMb, '1 TiB'),
      wallSeconds: atMost(
        positiveNumber(),
        B.wallSeconds,
        'the harness times executions with Node timers, which cannot wait longer than 2^31-1 ms across a correction loop',
      ),
      processes: atMost(positiveInt(), B.processes, "Linux's pid_max"),
      diskMb: atMost(positiveInt(), B.diskMb, '16 TiB'),
      /** How late after the wall limit a box may stop a program and still count as holding it. */
      wallToleranceMs: z
        .number({ error: 'expected an integer 0..60000 (ms)' })
        .int({ error: 'expected an integer 0..60000 (ms)' })
        .min(0, { error: 'expected an integer 0..60000 (ms)' })
        .max(60_000, { error: 'expected an integer 0..60000 (ms)' })
        .default(1000),
    }),
    identity: z.strictObject({
      unprivileged: z.boolean(),
      hostCredentials: z.enum(['none']),
    }),
    lifecycle: z.strictObject({
      freshEnvironment: z.boolean(),
      destroyAfter: z.boolean(),
    }),
    exports: z.strictObject({
      maxFiles: atMost(positiveInt(), B.maxFiles, 'files per export'),
      maxFileMb: atMost(positiveNumber(), B.maxMb, '1 TiB'),
      maxTotalMb: atMost(positiveNumber(), B.maxMb, '1 TiB'),
    }),
    output: z.strictObject({
      /** stdout + stderr together, per execution. */
      maxBytes: atMost(positiveInt(), B.outputMaxBytes, 'the harness reads up to 4× this per execution'),
    }),
    attempts: z.strictObject({
      corrections: atMost(nonNegativeInt(), B.corrections, 'attempts of a correction loop'),
      queueStartupSeconds: atMost(positiveNumber(), B.queueStartupSeconds, 'one hour'),
    }),
    posture: PostureSchema.optional(),
    isolation: z
      .strictObject({
        /** The box must not run on the host's kernel (a VM or a user-space kernel such as gVisor). */
        separateKernel: z.boolean(),
      })
      .optional(),
  })
  .meta({ id: 'sandcheck-policy', title: 'sandcheck policy' });

export type Policy = z.infer<typeof PolicySchema>;

/** The essay's numbers. */
export const REFERENCE_POLICY: Policy = {
  name: 'reference',
  files: { readOnlyInput: true, hostPaths: 'none' },
  network: { mode: 'off', allow: [] },
  resources: { cpus: 2, memoryMb: 512, wallSeconds: 30, processes: 64, diskMb: 1024, wallToleranceMs: 1000 },
  identity: { unprivileged: true, hostCredentials: 'none' },
  lifecycle: { freshEnvironment: true, destroyAfter: true },
  exports: { maxFiles: 20, maxFileMb: 5, maxTotalMb: 40 },
  output: { maxBytes: 2 * 1024 * 1024 },
  attempts: { corrections: 3, queueStartupSeconds: 12 },
  // The essay: no host paths or devices, a non-privileged identity with system calls restricted, namespaces.
  posture: { namespaces: ['mnt', 'pid', 'net', 'ipc', 'uts'], hostMounts: 'none', seccomp: 'required', capabilityBounding: 'no-dangerous', devices: 'none' },
  // A micro VM is the essay's stronger option for high risk, not its baseline: reported, not required.
  isolation: { separateKernel: false },
};

/** Same as reference with a 5 s wall so a full run fits in CI. */
export const CI_POLICY: Policy = {
  ...REFERENCE_POLICY,
  name: 'ci',
  resources: { ...REFERENCE_POLICY.resources, wallSeconds: 5 },
};

export const POLICY_PRESETS = { reference: REFERENCE_POLICY, ci: CI_POLICY } as const;
export type PresetName = keyof typeof POLICY_PRESETS;

export function isPresetName(name: string): name is PresetName {
  return Object.hasOwn(POLICY_PRESETS, name);
}
