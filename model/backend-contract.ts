import type { Policy } from './policy.js';
import type { Tristate } from './observation.js';
import type { BackendFact } from './environment.js';

/** The variable every box of a run carries in its environment (value: the run id): how a sweep tells a run's boxes apart. */
export const RUN_MARKER = 'SANDCHECK_RUN';

/** Policy items a backend can claim to enforce; anything it does not claim is refused (fail closed). */
export const POLICY_ITEMS = [
  'files.hostPaths',
  'files.readOnlyInput',
  'files.writeScope',
  'files.protected',
  'files.denyRead',
  'network.egress',
  'resources.cpus',
  'resources.memoryMb',
  'resources.wallSeconds',
  'resources.processes',
  'resources.diskMb',
  'identity.unprivileged',
  'identity.hostCredentials',
  'lifecycle.freshEnvironment',
  'lifecycle.destroyAfter',
  'output.maxBytes',
  'output.sanitized',
  'exports.limits',
  'posture.namespaces',
  'posture.hostMounts',
  'posture.seccomp',
  'posture.capabilityBounding',
  'posture.devices',
  'isolation.separateKernel',
] as const;
export type PolicyItem = (typeof POLICY_ITEMS)[number];

export interface Capabilities {
  /** none = the unsandboxed control; sandbox = claims some isolation. */
  isolation: 'none' | 'sandbox';
  enforces: readonly PolicyItem[];
  /** Why a policy item is not enforced: `unenforced` (a failure) when the policy requires it, else not-applicable. */
  notEnforcedReasons?: Partial<Record<PolicyItem, string>>;
  /**
   * Items the harness cannot judge on this backend for a cause outside the box (e.g. a daemon
   * outside the run's lab, whose boxes must not send network probes): not-applicable with the reason.
   */
  notObservable?: Partial<Record<PolicyItem, string>>;
  /**
   * Where the boxes' network is (1.1): `lab` (default) — on this machine, inside the run's lab
   * (`ctx.lab`); `remote` — elsewhere, so only a `sandcheck witness serve` the boxes can reach judges
   * the network probes (`--witness`); without one they are not-applicable, never held.
   */
  boxNetwork?: 'lab' | 'remote';
  /**
   * Set when the box cannot write files the harness reads back (a read-only sandbox): why. The adapter
   * check's writing halves and the task cases that need written results are then not applicable, with this reason.
   */
  noWrittenResults?: string;
  /**
   * Set when a box costs the machine almost nothing to start or hold (a namespace or a plain process): the
   * default schedule then runs the probes that mostly wait beside the CPU-bound ones. Unset: every box
   * counts as needing a core (a container runtime's or a tool's own start-up does).
   */
  lightBoxes?: boolean;
}

/** The run's lab: a network namespace the run created, with decoys on every address. */
export interface LabHandle {
  /** e.g. /run/netns/sc-<runId>; enter it with `nsenter --net=<path>` (never `ip netns exec`). */
  netnsPath: string;
  /** A resolv.conf pointing at the lab's decoy resolver, for backends that bind one in. */
  resolvConfPath: string;
}

export interface BackendContext {
  runId: string;
  /**
   * The controller's own environment: it holds the run's decoy credentials. A backend launches its
   * machinery with it and must not let it reach the box; the `process` control passes it straight in.
   */
  controllerEnv: Readonly<Record<string, string>>;
  /** A directory on the host for this run's scratch files; removed by the harness at the end. */
  scratchDir: string;
  /** Present when the run has a lab: local backends must run their boxes inside it. */
  lab?: LabHandle;
}

export interface PutFile {
  path: string;
  content: Uint8Array;
  mode?: number;
  readOnly?: boolean;
}

export interface ByteSink {
  write(chunk: Uint8Array): void;
}

export interface ExecRequest {
  argv: readonly string[];
  stdin?: Uint8Array;
  /** Variables for the program on top of the backend's clean base environment. */
  env?: Readonly<Record<string, string>>;
  /** Relative to the environment's workspace. */
  cwd?: string;
  /** The backend's own limit (the policy's wall clock); the harness keeps a later deadline of its own. */
  timeoutMs: number;
  /** The backend's own output limit (stdout + stderr), if it enforces one. */
  maxOutputBytes: number;
  stdout: ByteSink;
  stderr: ByteSink;
  /** Aborted by the harness (deadline, output ceiling, interrupt): the backend must stop the program now. */
  signal: AbortSignal;
}

/** Counters read from outside the box (e.g. the environment's cgroup files); absent fields were not observable. */
export interface ResourceReport {
  /** Where the numbers came from, e.g. "cgroup v1 memory,pids,cpu,cpuacct,freezer: sandcheck-<run>-<env>". */
  source: string;
  memoryLimitBytes?: number;
  memoryPeakBytes?: number;
  memoryFailcnt?: number;
  oomKills?: number;
  pidsLimit?: number;
  pidsPeak?: number;
  /** Times a fork was refused at the pids limit (pids.events "max"). */
  pidsMaxEvents?: number;
  cpuQuotaCores?: number;
  cpuUsageNs?: number;
  cpuThrottledPeriods?: number;
}

/** Program outcomes are results, never exceptions. Facts a backend cannot know are 'unknown'. */
export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  startError?: string;
  timedOut: Tristate;
  oomKilled: Tristate;
  outputTruncated: Tristate;
  resources?: ResourceReport;
}

export type FileKind = 'file' | 'directory' | 'symlink' | 'hardlink' | 'fifo' | 'socket' | 'device' | 'other' | 'missing';

/**
 * One artifact as the backend's download API handed it over: hostile data. `hardlink` is a
 * regular file with more than one link; `content` is whatever bytes the API returned (a careful
 * API returns none for links; a naive one follows them).
 */
export interface GotFile {
  path: string;
  kind: FileKind;
  content?: Uint8Array;
  size: number;
  /** For symlinks: the target as stored in the box. */
  linkTarget?: string;
  nlink?: number;
  note?: string;
}

export interface Leftovers {
  /** Anything the environment left behind after destroy: processes, files, mounts… */
  items: string[];
}

export interface Environment {
  readonly id: string;
  /** The host directory backing the workspace, when there is one (the naive exporter's positive controls read links there). */
  readonly hostWorkspace?: string;
  putFiles(files: readonly PutFile[]): Promise<void>;
  exec(request: ExecRequest): Promise<ExecResult>;
  getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]>;
  /** Host pids of the box's live processes (for identity checks from outside), if the backend can tell. */
  hostPids?(): Promise<number[]>;
  /**
   * The box's program runs inside a user-space kernel (gVisor's Sentry): no host process is ever it. Honoured only
   * from sandcheck's own backends, whose word this is: the host's record of the execution's processes
   * (harness/exec-tracker.ts) is then not kept, since it could find nothing and its reads slow the runtime's stubs.
   */
  readonly programInUserSpaceKernel?: boolean;
  /** Idempotent. */
  destroy(): Promise<Leftovers>;
}

export interface Backend {
  readonly name: string;
  readonly description: string;
  /**
   * Called with the run's policy before capabilities() (optional): an adapter whose claims must be asked
   * of something else (an rpc adapter process, a vendor's API) fetches them here. Idempotent.
   */
  prepare?(policy: Policy): Promise<void>;
  capabilities(policy: Policy): Capabilities;
  /** Throws SandcheckError('BACKEND_UNAVAILABLE') with a hint when it cannot run here. */
  preflight(): Promise<void>;
  create(policy: Policy, ctx: BackendContext): Promise<Environment>;
  /**
   * Run-wide setup once the run's lab exists (e.g. a private Docker daemon started inside it);
   * close() is called after the last environment is destroyed and before the lab goes.
   */
  openRun?(ctx: { runId: string; lab?: LabHandle; controllerEnv?: Readonly<Record<string, string>> }): Promise<{ close(): Promise<Leftovers> }>;
  /**
   * What the backend can tell of itself once it has run (optional; asked after the last box, before openRun's
   * close()): the image digest it ran, its daemon's version. Recorded in the cards' environment and the sign-off
   * fingerprint. Never throws for want of an answer: a fact it cannot learn is left out.
   */
  describe?(): Promise<readonly BackendFact[]>;
  /** Called once when the harness is done with the backend (optional): end what load started (an adapter process). */
  dispose?(): Promise<void>;
  /**
   * The options from `--backend-config` as this backend parsed and applies them, as JSON (optional; the built-in
   * backends have it). The card records these and their hash instead of the file's text.
   */
  appliedOptions?(): unknown;
}

export type BackendFactory = () => Promise<Backend>;
