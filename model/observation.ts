import { z } from 'zod';

/** What the harness kept of one output channel: bounded head and tail, exact count and hash of everything. */
export const CaptureSummarySchema = z.strictObject({
  bytes: z.number().int().nonnegative(),
  sha256: z.string(),
  truncated: z.boolean(),
  headBase64: z.string(),
  tailBase64: z.string(),
  /** Head as text with control characters made visible; for humans. */
  preview: z.string(),
});
export type CaptureSummary = z.infer<typeof CaptureSummarySchema>;

export const KilledBy = z.enum(['none', 'harness-deadline', 'harness-output-ceiling', 'harness-interrupt', 'backend']);
export type KilledBy = z.infer<typeof KilledBy>;

/** A backend-reported fact that the backend may not be able to know. */
export const Tristate = z.union([z.boolean(), z.literal('unknown')]);
export type Tristate = z.infer<typeof Tristate>;

/** Counters the backend read from outside the box (cgroup files). */
export const ResourceReportSchema = z.strictObject({
  source: z.string(),
  memoryLimitBytes: z.number().optional(),
  memoryPeakBytes: z.number().optional(),
  memoryFailcnt: z.number().optional(),
  oomKills: z.number().optional(),
  pidsLimit: z.number().optional(),
  pidsPeak: z.number().optional(),
  pidsMaxEvents: z.number().optional(),
  cpuQuotaCores: z.number().optional(),
  cpuUsageNs: z.number().optional(),
  cpuThrottledPeriods: z.number().optional(),
});

/** A process of the box as the host kernel saw it while the payload ran. */
export const ProcessIdentitySchema = z.strictObject({
  pid: z.number().int(),
  command: z.string(),
  realUid: z.number().int(),
  effectiveUid: z.number().int(),
  capEff: z.string(),
  noNewPrivs: z.number().int().nullable(),
  seccomp: z.number().int().nullable(),
  peakRssBytes: z.number().nullable(),
  hostUserNamespace: z.boolean(),
  /** The file it runs, as the host stats it through /proc/<pid>/exe: permission bits (setuid 0o4000) and owner. */
  executable: z.strictObject({ mode: z.number().int(), uid: z.number().int() }).optional(),
});

/**
 * The box's program on a kernel that runs in user space (gVisor's Sentry), as the host saw it: the host process
 * whose memory (mapped from the kernel's own memory file) held this execution's nonce is where the box's code
 * runs; its parent is the kernel that serves its system calls.
 */
export const UserSpaceKernelSchema = z.strictObject({
  kernel: z.string(),
  /** How the address space was tied to this execution (where the nonce was found). */
  tie: z.string(),
  addressSpaces: z.array(ProcessIdentitySchema).min(1),
  kernels: z.array(ProcessIdentitySchema),
  /** Its file servers among the box's host processes (runsc's gofer): they open the box's files on the host. */
  fileServers: z.array(ProcessIdentitySchema),
  /** When the kernel started (clock ticks after boot), read at the tie: looked up again after destroy, the same start means the same process. */
  kernelStarted: z.number().int().optional(),
  /**
   * A program the payload ran with this execution's program mark in its environment or arguments (identity-setuid's
   * planted binary, survive-teardown's daemon): the address space of the same kernel that held the mark and, read
   * whole, not the nonce (the payload's own holds both), with its identity and the kernel's read at that moment.
   */
  marked: z
    .strictObject({
      tie: z.string(),
      addressSpace: ProcessIdentitySchema,
      kernel: ProcessIdentitySchema.optional(),
      /** When each started (clock ticks after boot): looked up again after destroy, the same start means the same process. */
      started: z.strictObject({ addressSpace: z.number().int(), kernel: z.number().int().optional() }).optional(),
    })
    .optional(),
});
export type UserSpaceKernel = z.infer<typeof UserSpaceKernelSchema>;

const HealthSampleSchema = z.strictObject({
  memAvailableBytes: z.number(),
  diskFreeBytes: z.number(),
  processCount: z.number().int(),
});

/** The host watchdog: machine gauges before, at worst during, and after the execution. */
export const HostHealthSchema = z.strictObject({
  before: HealthSampleSchema,
  worst: HealthSampleSchema,
  after: HealthSampleSchema,
  maxEventLoopDelayMs: z.number(),
  memTotalBytes: z.number(),
});

export const ExecObservationSchema = z.strictObject({
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** Measured by the harness's own clock, from exec call to result. */
  wallMs: z.number().nonnegative(),
  /** From the exec call to the program's first byte of stdout (the payload's start line). */
  firstOutputMs: z.number().nonnegative().optional(),
  /** Cold start: from the create() call to the program's first byte of stdout. */
  startupMs: z.number().nonnegative().optional(),
  harnessDeadlineMs: z.number().nonnegative(),
  killedBy: KilledBy,
  /** The program could not be started at all (e.g. interpreter missing). */
  startError: z.string().optional(),
  backendReport: z.strictObject({
    timedOut: Tristate,
    oomKilled: Tristate,
    outputTruncated: Tristate,
  }),
  stdout: CaptureSummarySchema,
  stderr: CaptureSummarySchema,
  /** Counters read from outside the box by sandcheck's own code: a built-in backend's, or the host's read of the box's cgroups. */
  resources: ResourceReportSchema.optional(),
  /** The counters an adapter outside sandcheck reported: its claim, kept for the reader, never evidence. */
  adapterResources: ResourceReportSchema.optional(),
  /** Sampled from /proc/<pid>/status of the box's host pids while it ran (when the backend can name them). */
  hostProcesses: z.array(ProcessIdentitySchema).optional(),
  /** Most of the box's processes alive at one sample. */
  hostProcessCountMax: z.number().int().optional(),
  /** Set when none of the box's host processes ran its program but a user-space kernel's address space held its nonce. */
  userSpaceKernel: UserSpaceKernelSchema.optional(),
  /**
   * Processes of this execution's program (its nonce in their argv or environment, or a parent's) that the host found
   * and the adapter never named among the box's processes: the program ran where the adapter did not say.
   */
  unnamedProcesses: z.array(z.string()).optional(),
  /** Pids the adapter named that carried nothing of this execution (nor a parent or child of one that did): never evidence. */
  unlinkedNamedPids: z.array(z.string()).optional(),
  hostHealth: HostHealthSchema.optional(),
});
export type ExecObservation = z.infer<typeof ExecObservationSchema>;
