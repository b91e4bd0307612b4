import { randomBytes } from 'node:crypto';
import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { SandcheckError, errorMessage } from '../../harness/errors.js';
import type { Tristate } from '../../harness/model/observation.js';
import type { Policy } from '../../harness/model/policy.js';
import type { BackendFact } from '../../harness/environment-model.js';
import { visibleLine } from '../../reports/clean-text.js';
import { RUN_MARKER } from '../../harness/run-context.js';
import type {
  Backend,
  BackendContext,
  LabHandle,
  Capabilities,
  Environment,
  ExecRequest,
  ExecResult,
  GotFile,
  Leftovers,
  PutFile,
} from '../contract.js';
import { processTree, readStat, sameProcessAlive } from '../shared/host-proc.js';
import { killMarkedProcesses, killQuietly } from '../shared/process-kill.js';
import { selfOwner } from '../shared/process-owner.js';
import { stopRunningExec, TeardownOnce } from '../shared/teardown.js';
import { type ContainerState, type DaemonInfo, type DockerClient, type PathStat } from './client.js';
import { CappedDemux } from './demux.js';
import { canUseV1Parents, createParentCgroup, ExecCounters, locateContainerCgroup, PARENT_PREFIX, type ContainerCgroup, type ParentCgroup } from './cgroups.js';
import { formatOwner } from './host.js';
import { DEFAULT_LAB_DAEMON_ROOT, privateDaemonProblem, startLabDaemon, sweepStaleLabDaemons, type LabDaemon } from './lab-daemon.js';
import type { ResolvedDockerOptions } from './options.js';
import { sweepDockerLeftovers } from './sweep.js';
import type { EnvRoot } from '../bwrap/workspace.js';
import { createDiskWorkspace, DEFAULT_DISK_STATE_DIR, diskImageSupport, removeDiskWorkspace, sweepDiskWorkspaces } from './disk-workspace.js';
import { capabilitiesFor, hostConfigFor, isGvisor, PROFILES, userOf, WORKSPACE, workspaceVolumeOptions, type Profile } from './profiles.js';
import { packEntries, readFirstEntry, workspaceSegments, type PackEntry } from './tar.js';

import { ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN } from './labels.js';

export { ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN };

const MIB = 1024 * 1024;
const SAFE_ID = /^[a-z0-9][a-z0-9_.-]{0,40}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** How long preflight waits for the daemon. */
const PING_TIMEOUT_MS = 1500;
/** Counters are sampled this often while an exec runs (the container's cgroup vanishes if it dies). */
const SAMPLE_MS = 50;
/** After a kill, how long the attach connection may take to end before we let go of it. */
const STREAM_GRACE_MS = 5000;
const STOP_WAIT_MS = 15_000;
/** How often an exec checks that its container still lives, and how long after its death the exec is let go. */
const DEATH_POLL_MS = 200;
const DEAD_GRACE_MS = 300;

/**
 * The keep-alive main process of every environment's container: it holds the container (and so its
 * cgroup and its tmpfs workspace volume) for the environment's life; each exec is a `docker exec`.
 */
const KEEPALIVE = ['python3', '-c', 'import signal,sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True: signal.pause()\n'];

export interface ImageProvider {
  /** The image reference to run (built or checked once per backend). */
  (client: DockerClient): Promise<string>;
}

export interface DockerBackendParts {
  opts: ResolvedDockerOptions;
  /**
   * The daemon to talk to (`socketPath` or DOCKER_HOST). Absent in private mode: `openRun()` starts the
   * run's own daemon and connects to it.
   */
  client?: DockerClient;
  /** Builds or checks the image; `preflight()` (or `openRun()`) and the first `create()` call it once per daemon. */
  image: ImageProvider;
  /** The configuration's SecurityOpt with seccomp profiles read from their files (the Engine API takes the JSON itself). */
  securityOpt?: readonly string[];
}

/** What `openRun()` hands back: the run's daemon (private mode) and how to take it down. */
export interface DockerRunHandle {
  daemon: LabDaemon | undefined;
  /** ms to start the daemon and have the image ready. */
  readyMs: number;
  close(): Promise<Leftovers>;
}

export const UNAVAILABLE_HINT =
  'start a Docker daemon and point the backend at it: `apt-get install -y docker.io runsc`, then either let sandcheck start its own ' +
  'daemon inside the run\'s lab (private mode, the default: needs root), or run `dockerd --host unix:///run/sandcheck-docker.sock &` and pass that socket ' +
  '(or set DOCKER_HOST)';

/** What /work is for this backend's environments, and why when it is not the disk image. */
type WorkspaceChoice = { kind: 'disk-image'; mkfs: string } | { kind: 'tmpfs'; reason: string | undefined };

interface Connection {
  client: DockerClient;
  /** The namespace the daemon runs in, when sandcheck started it (the lab's, or an empty one). */
  netnsPath: string | undefined;
  daemon: LabDaemon | undefined;
}

export class DockerBackend implements Backend {
  readonly name: string;
  private readonly baseDescription: string;
  readonly profile: Profile;
  /** The configured runtime is gVisor (runsc). */
  readonly gvisor: boolean;
  /** `User` for create and exec ('' = root) and the box's uid (0 = root). */
  readonly boxUser: { user: string; uid: number };
  /** private = sandcheck starts the run's own daemon in `openRun()`; external = socketPath or DOCKER_HOST. */
  readonly mode: 'private' | 'external';
  private conn: Connection | undefined;
  private imageRef: Promise<string> | undefined;
  private daemonInfo: DaemonInfo | undefined;
  private parentsOk: Promise<string | undefined> | undefined;
  private workspaceChoice: Promise<WorkspaceChoice> | undefined;
  private workspaceNote = '';

  constructor(readonly parts: DockerBackendParts) {
    const own = parts.opts.container;
    this.profile = own ? { ...own, name: own.name ?? 'docker', description: own.description ?? 'your own container configuration' } : PROFILES[parts.opts.profile ?? 'docker-hardened'];
    this.gvisor = isGvisor(this.profile, parts.opts.gvisorRuntime);
    this.boxUser = userOf(this.profile, parts.opts.boxUid);
    this.name = this.profile.name;
    this.mode = parts.client ? 'external' : 'private';
    if (parts.client) this.conn = { client: parts.client, netnsPath: parts.opts.labNetnsPath, daemon: undefined };
    const where =
      this.mode === 'private'
        ? "a private dockerd started for the run inside its lab"
        : parts.opts.labNetnsPath
          ? "a daemon inside the run's lab"
          : (parts.client?.endpoint ?? '');
    this.baseDescription = `${this.profile.description ?? this.profile.name}; image ${parts.opts.image ?? "sandcheck-python (built offline from this machine's Python)"}; ${where}${
      parts.opts.assumePolicy ? ' (claims the whole policy, as a team trusting it would)' : ''
    }`;
  }

  /** The profile, image and daemon; once preflight has chosen it, the workspace (and why not a disk image). */
  get description(): string {
    return `${this.baseDescription}${this.workspaceNote}`;
  }

  private get diskStateDir(): string {
    return this.parts.opts.diskStateDir ?? DEFAULT_DISK_STATE_DIR;
  }

  /**
   * disk-image or tmpfs, decided once. A daemon that sandcheck did not start in the lab may run elsewhere (another
   * machine, another mount namespace): it gets the tmpfs volume unless the option asks for the image.
   */
  workspaceKind(): Promise<WorkspaceChoice> {
    this.workspaceChoice ??= this.chooseWorkspace().then((c) => {
      this.workspaceNote = c.kind === 'disk-image' ? '; workspace: sized ext4 image' : `; workspace: sized tmpfs volume${c.reason ? ` (not a disk image: ${c.reason})` : ''}`;
      return c;
    });
    return this.workspaceChoice;
  }

  private async chooseWorkspace(): Promise<WorkspaceChoice> {
    const { opts } = this.parts;
    if (opts.workspace === 'tmpfs') return { kind: 'tmpfs', reason: undefined };
    const hint = 'set workspace: "tmpfs" (its pages count against the memory limit, so disk-fill is inconclusive when memory is the smaller limit)';
    if (opts.workspace === undefined && this.mode === 'external' && opts.labNetnsPath === undefined) {
      return { kind: 'tmpfs', reason: "the daemon is not one sandcheck knows to share this machine's mounts (set workspace: \"disk-image\" for a local one)" };
    }
    if (this.conn && !this.conn.client.local) {
      if (opts.workspace === 'disk-image') throw new SandcheckError('BACKEND_UNAVAILABLE', `a disk-image workspace is mounted on this machine, and the daemon at ${this.conn.client.endpoint} is not local`, { hint });
      return { kind: 'tmpfs', reason: 'the daemon is not on this machine' };
    }
    const support = await diskImageSupport();
    if ('problem' in support) {
      if (opts.workspace === 'disk-image') throw new SandcheckError('BACKEND_UNAVAILABLE', `a disk-image workspace cannot be made: ${support.problem}`, { hint });
      return { kind: 'tmpfs', reason: support.problem };
    }
    return { kind: 'disk-image', mkfs: support.mkfs };
  }

  get client(): DockerClient {
    return this.connection().client;
  }

  private connection(): Connection {
    if (!this.conn) throw new SandcheckError('HARNESS', "the run's private Docker daemon is not started: call openRun() first");
    return this.conn;
  }

  /**
   * The daemon's containers meet only decoys: a private daemon (in the lab, or in an empty namespace when the
   * run has none) or an external one the caller says runs in the lab.
   */
  private get sealed(): boolean {
    return this.mode === 'private' || this.parts.opts.labNetnsPath !== undefined;
  }

  capabilities(policy: Policy): Capabilities {
    return capabilitiesFor(this.profile, policy, { inLab: this.sealed, endpoint: this.conn?.client.endpoint ?? 'private' }, this.parts.opts.assumePolicy, this.parts.opts.gvisorRuntime);
  }

  /** The image, built or checked once per daemon. */
  image(): Promise<string> {
    const client = this.client;
    this.imageRef ??= this.parts.image(client).catch((err: unknown) => {
      this.imageRef = undefined;
      throw err;
    });
    return this.imageRef;
  }

  /** The image this run's boxes ran (reference and content digest) and the daemon that ran them. */
  async describe(): Promise<BackendFact[]> {
    const conn = this.conn;
    if (!conn) return [];
    const facts: BackendFact[] = [];
    const add = (name: string, value: string): void => {
      if (value !== '') facts.push({ name, value: visibleLine(value).slice(0, 256) });
    };
    const [ref, version, info] = await Promise.all([
      this.imageRef?.catch(() => undefined),
      conn.client.version?.().catch(() => undefined),
      this.info().catch(() => undefined),
    ]);
    if (ref !== undefined) {
      add('image', ref);
      add('image digest', (await conn.client.inspectImage(ref).catch(() => undefined))?.Id ?? '');
    }
    if (version) add('daemon', `${info?.Podman ? 'podman' : 'dockerd'} ${version.Version} (API ${version.ApiVersion})`);
    else if (info) add('daemon', `${info.Podman ? 'podman' : 'dockerd'} ${info.ServerVersion}`);
    add('daemon mode', conn.daemon ? "private: the run's own dockerd" : `external: ${conn.client.endpoint}`);
    if (info) add('runtime', this.gvisor ? `runsc (default ${info.DefaultRuntime})` : info.DefaultRuntime);
    return facts;
  }

  async preflight(): Promise<void> {
    const { opts } = this.parts;
    if (this.mode === 'private' && !this.conn) {
      // Fast checks only: the daemon itself is started by openRun() once the run's lab exists.
      const problem = await privateDaemonProblem(this.gvisor);
      if (problem) throw new SandcheckError('BACKEND_UNAVAILABLE', problem.message, { hint: problem.hint });
      await this.workspaceKind();
      return;
    }
    if (opts.socketPath !== undefined) {
      const st = await stat(opts.socketPath).catch(() => undefined);
      if (!st) throw new SandcheckError('BACKEND_UNAVAILABLE', `no Docker daemon socket at ${opts.socketPath}`, { hint: UNAVAILABLE_HINT });
      if (!st.isSocket()) throw new SandcheckError('BACKEND_UNAVAILABLE', `${opts.socketPath} is not a unix socket`, { hint: UNAVAILABLE_HINT });
    }
    try {
      await this.client.ping(AbortSignal.timeout(PING_TIMEOUT_MS));
    } catch (err) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the Docker daemon at ${this.client.endpoint} does not answer: ${errorMessage(err)}`, { hint: UNAVAILABLE_HINT, cause: err });
    }
    await this.workspaceKind();
    const info = await this.info();
    const runtime = this.profile.HostConfig.Runtime === 'runsc' ? opts.gvisorRuntime : this.profile.HostConfig.Runtime;
    if (runtime !== undefined && !(runtime in info.Runtimes)) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the Docker daemon has no "${runtime}" runtime (it has: ${Object.keys(info.Runtimes).join(', ')})`, {
        hint: 'apt-get install -y runsc; the private daemon registers it itself, for your own daemon add {"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}} to its daemon.json',
      });
    }
    try {
      await this.image();
    } catch (err) {
      if (err instanceof SandcheckError) throw err;
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the probe image is not usable: ${errorMessage(err)}`, { cause: err });
    }
  }

  /**
   * Before the run's first environment. Private mode: sweeps daemons that crashed runs left, starts the run's
   * own dockerd inside the lab (`ctx.lab`; without a lab, in an empty network namespace) and readies the image.
   * External mode: removes what dead runs left on that daemon. `close()` stops and removes the private daemon.
   */
  async openRun(ctx: { runId: string; lab?: LabHandle; controllerEnv?: Readonly<Record<string, string>> }): Promise<DockerRunHandle> {
    const t0 = performance.now();
    if (this.mode === 'external') {
      await sweepDockerLeftovers(this.client, { keepRunId: ctx.runId, diskStateDir: this.diskStateDir }).catch(() => undefined);
      await this.preflight();
      return { daemon: undefined, readyMs: performance.now() - t0, close: async () => ({ items: [] }) };
    }
    if (this.conn) throw new SandcheckError('HARNESS', `a private Docker daemon is already running for this backend (${this.conn.daemon?.dir ?? '?'})`);
    const root = this.parts.opts.daemonRoot ?? DEFAULT_LAB_DAEMON_ROOT;
    await sweepStaleLabDaemons(root).catch(() => undefined);
    // After the dead runs' daemons (and so their containers) are gone: their disk-image workspaces.
    await sweepDiskWorkspaces(this.diskStateDir, ctx.runId).catch(() => undefined);
    const daemon = await startLabDaemon({
      runId: ctx.runId,
      ...(ctx.lab ? { netnsPath: ctx.lab.netnsPath } : {}),
      dir: join(root, ctx.runId),
      // The run's decoy credentials in the daemon's environment, as a real control plane keeps its own.
      ...(ctx.controllerEnv ? { env: ctx.controllerEnv } : {}),
    });
    this.conn = { client: daemon.client, netnsPath: daemon.netnsPath, daemon };
    this.resetDaemonState();
    try {
      await this.preflight();
    } catch (err) {
      await daemon.stop().catch(() => undefined);
      this.conn = undefined;
      throw err;
    }
    let closing: Promise<Leftovers> | undefined;
    return {
      daemon,
      readyMs: performance.now() - t0,
      close: () => {
        closing ??= daemon.stop().then((r) => {
          this.conn = undefined;
          this.resetDaemonState();
          return { items: r.leftovers };
        });
        return closing;
      },
    };
  }

  private resetDaemonState(): void {
    this.imageRef = undefined;
    this.daemonInfo = undefined;
    this.parentsOk = undefined;
  }

  private async info(): Promise<DaemonInfo> {
    this.daemonInfo ??= await this.client.info();
    return this.daemonInfo;
  }

  /** Where a workspace volume's files are on this machine (local daemons), for link counts. */
  async hostVolumeDir(volumeName: string): Promise<string | undefined> {
    if (!this.client.local) return undefined;
    const root = (await this.info()).DockerRootDir;
    if (!root) return undefined;
    const dir = join(root, 'volumes', volumeName, '_data');
    return (await lstat(dir).catch(() => undefined))?.isDirectory() ? dir : undefined;
  }

  /** Per-environment parent cgroups need a local cgroupfs daemon on cgroup v1 and root. */
  private parentsUsable(): Promise<string | undefined> {
    this.parentsOk ??= (async () => {
      if (!this.client.local) return 'the daemon is not on this machine';
      const info = await this.info();
      if (info.CgroupDriver !== 'cgroupfs') return `the daemon's cgroup driver is ${info.CgroupDriver || 'unknown'}, not cgroupfs`;
      if (info.CgroupVersion !== '' && info.CgroupVersion !== '1') return `the daemon uses cgroup v${info.CgroupVersion}`;
      // Podman (cgroupfs) runs every conmon, one per exec, in <CgroupParent>/conmon: the parent's hierarchical
      // counters (pids peak, memory peak, CPU) would count them, and they outlive the container by 300 s (exit delay).
      if (info.Podman) return "Podman puts its conmon monitors under the cgroup parent";
      return canUseV1Parents();
    })();
    return this.parentsOk;
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const { opts } = this.parts;
    if (!SAFE_ID.test(ctx.runId)) throw new SandcheckError('HARNESS', `run id "${ctx.runId}" is not safe in container names`);
    const daemonNetns = this.connection().netnsPath;
    if (ctx.lab && this.sealed && daemonNetns !== ctx.lab.netnsPath) {
      // Fail closed: the decoys that would witness this box's traffic live in another namespace.
      throw new SandcheckError('HARNESS', `the Docker daemon runs in ${daemonNetns ?? 'another namespace'}, not in this run's lab ${ctx.lab.netnsPath}`);
    }
    const t0 = performance.now();
    const image = await this.image();
    const envId = randomBytes(4).toString('hex');
    const name = `sandcheck-${ctx.runId}-${envId}`;
    const owner = formatOwner(await selfOwner());
    const labels = { [LABEL_RUN]: ctx.runId, [LABEL_ENV]: envId, [LABEL_PROFILE]: this.profile.name, [LABEL_OWNER]: owner };
    const workspace = await this.workspaceKind();
    const volumeName = workspace.kind === 'tmpfs' ? `${name}-work` : undefined;
    let disk: EnvRoot | undefined;
    let parent: ParentCgroup | undefined;
    let containerId: string | undefined;
    let volumeMade = false;
    try {
      if ((await this.parentsUsable()) === undefined) parent = await createParentCgroup(`${PARENT_PREFIX}${ctx.runId}-${envId}`);
      if (workspace.kind === 'disk-image') {
        disk = await createDiskWorkspace({ stateDir: this.diskStateDir, scratchDir: ctx.scratchDir, runId: ctx.runId, envId, bytes: policy.resources.diskMb * MIB, mkfs: workspace.mkfs });
      } else if (volumeName !== undefined) {
        await this.client.createVolume({ Name: volumeName, Driver: 'local', DriverOpts: workspaceVolumeOptions(policy), Labels: labels });
        volumeMade = true;
      }
      containerId = await this.client.createContainer({
        name,
        Image: image,
        Entrypoint: [...KEEPALIVE],
        Cmd: [],
        Env: boxEnv(this.profile.Config.Env ?? [], [`PATH=${BASE_PATH}`, `HOME=${WORKSPACE}`, 'LANG=C.UTF-8', `${RUN_MARKER}=${ctx.runId}`, `${ENV_MARKER}=${envId}`]),
        User: this.boxUser.user,
        WorkingDir: WORKSPACE,
        Hostname: 'sandcheck',
        Labels: labels,
        HostConfig: hostConfigFor(this.profile, {
          policy,
          boxUid: opts.boxUid,
          ...(this.parts.securityOpt ? { securityOpt: this.parts.securityOpt } : {}),
          ...(disk ? { bindSource: disk.work } : volumeName !== undefined ? { volumeName } : {}),
          gvisorRuntime: opts.gvisorRuntime,
          ...(parent ? { cgroupParent: parent.parentPath } : {}),
        }),
      });
      await this.client.startContainer(containerId);
      const details = await this.client.inspectContainer(containerId);
      if (!details?.State.Running) {
        throw new SandcheckError('HARNESS', `the environment's container stopped right after start (${details?.State.Error || `exit ${details?.State.ExitCode ?? '?'}`})`);
      }
      const cg = this.client.local && details.State.Pid > 0 ? await locateContainerCgroup(details.State.Pid, containerId) : undefined;
      const env = new DockerEnvironment({
        id: envId,
        runId: ctx.runId,
        name,
        containerId,
        volumeName,
        disk,
        initPid: cg ? details.State.Pid : undefined,
        initStartTime: cg ? (await readStat(details.State.Pid))?.startTime : undefined,
        cgroup: cg,
        parent,
        backend: this,
        policy,
        createMs: performance.now() - t0,
      });
      return env;
    } catch (err) {
      // Leave nothing behind from a half-built environment.
      if (containerId !== undefined) await this.client.removeContainer(containerId).catch(() => undefined);
      if (volumeMade && volumeName !== undefined) await this.client.removeVolume(volumeName).catch(() => undefined);
      if (disk) await removeDiskWorkspace(disk, `environment ${envId}`).catch(() => undefined);
      await parent?.remove().catch(() => undefined);
      if (err instanceof SandcheckError) throw err;
      throw new SandcheckError('HARNESS', `cannot create the docker environment: ${errorMessage(err)}`, { cause: err });
    }
  }
}

/** The configuration's own Env first, then sandcheck's (which win: the markers and PATH must be these). */
function boxEnv(own: readonly string[], ours: readonly string[]): string[] {
  const mine = new Set(ours.map((e) => e.split('=')[0]));
  return [...own.filter((e) => !mine.has(e.split('=')[0])), ...ours];
}

type StopReason = 'timeout' | 'output' | 'abort' | 'destroy';

interface EnvInit {
  id: string;
  runId: string;
  name: string;
  containerId: string;
  /** The daemon's tmpfs volume at /work, or (disk) the mounted disk image bound there. */
  volumeName: string | undefined;
  disk: EnvRoot | undefined;
  /** `State.Pid` when the daemon is local and the cgroup was found. */
  initPid: number | undefined;
  /** Its start time (clock ticks since boot): the pid is only that process while the start time matches. */
  initStartTime: number | undefined;
  cgroup: ContainerCgroup | undefined;
  parent: ParentCgroup | undefined;
  backend: DockerBackend;
  policy: Policy;
  createMs: number;
}

interface Running {
  stop(why: StopReason): Promise<void>;
  done: Promise<void>;
}

/** One environment = one container (keep-alive main process) + its workspace (disk image or tmpfs volume) + its parent cgroup. */
export class DockerEnvironment implements Environment {
  readonly id: string;
  readonly containerId: string;
  readonly volumeName: string | undefined;
  /** create(): volume, container, start (ms). */
  readonly createMs: number;
  /** create() until the first exec's process was running (ms): the cold start. */
  coldStartMs: number | undefined;
  private readonly createdAt: number;
  private running: Running | undefined;
  private readonly teardownOnce = new TeardownOnce();
  /** Why the container is no longer running, once it is not. */
  private stoppedWhy: string | undefined;
  private readonly client: DockerClient;

  constructor(private readonly init: EnvInit) {
    this.id = init.id;
    this.containerId = init.containerId;
    this.volumeName = init.volumeName;
    this.createMs = init.createMs;
    this.createdAt = performance.now() - init.createMs;
    this.client = init.backend.client;
  }

  private get execUser(): string {
    return this.init.backend.boxUser.user;
  }

  private assertUsable(what: string): void {
    if (this.teardownOnce.begun) throw new SandcheckError('HARNESS', `${what} on a destroyed environment`);
    if (this.running) throw new SandcheckError('HARNESS', `${what} while an exec of this environment runs`);
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    this.assertUsable('putFiles');
    if (this.stoppedWhy) throw new SandcheckError('HARNESS', `putFiles: the environment's container is not running (${this.stoppedWhy})`);
    const boxId = this.init.backend.boxUser.uid;
    const dirs = new Set<string>();
    const entries: PackEntry[] = [];
    for (const f of files) {
      const segs = workspaceSegments(f.path);
      for (let i = 1; i < segs.length; i++) {
        const d = segs.slice(0, i).join('/');
        if (dirs.has(d)) continue;
        dirs.add(d);
        // Root-owned and sticky like the workspace itself: the box adds files, but cannot remove or rename root's inputs.
        entries.push({ name: d, type: 'directory', mode: 0o1777, uid: 0, gid: 0 });
      }
      const readOnly = f.readOnly === true;
      entries.push({
        name: segs.join('/'),
        type: 'file',
        mode: readOnly ? (f.mode ?? 0o444) & 0o7555 : (f.mode ?? 0o644) & 0o7777,
        uid: readOnly ? 0 : boxId,
        gid: readOnly ? 0 : boxId,
        content: f.content,
      });
    }
    try {
      await this.client.putArchive(this.containerId, WORKSPACE, await packEntries(entries));
    } catch (err) {
      throw new SandcheckError('HARNESS', `cannot put files into the environment: ${errorMessage(err)}`, { cause: err });
    }
  }

  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    this.assertUsable('getFiles');
    const { exports } = this.init.policy;
    const maxFile = Math.min(options.maxBytesPerFile, exports.maxFileMb * MIB);
    const maxTotal = exports.maxTotalMb * MIB;
    const out: GotFile[] = [];
    let total = 0;
    let count = 0;
    for (const p of paths) {
      const got = await this.getOne(p, maxFile);
      if (got.content) {
        if (count >= exports.maxFiles) {
          out.push({ path: got.path, kind: got.kind, size: got.size, note: `not exported: past the policy's ${exports.maxFiles} files` });
          continue;
        }
        if (total + got.size > maxTotal) {
          out.push({ path: got.path, kind: got.kind, size: got.size, note: `not exported: past the policy's ${exports.maxTotalMb} MB in total` });
          continue;
        }
        count++;
        total += got.size;
      }
      out.push(got);
    }
    return out;
  }

  private async getOne(rel: string, maxBytes: number): Promise<GotFile> {
    let segs: string[];
    try {
      segs = workspaceSegments(rel);
    } catch (err) {
      return { path: rel, kind: 'other', size: 0, note: errorMessage(err) };
    }
    const gone = this.stoppedWhy && !this.init.disk ? `; the environment's container stopped (${this.stoppedWhy}) and its tmpfs workspace went with it` : '';
    // The daemon resolves symlinks in parent directories (inside the container root): look at each parent first.
    for (let i = 1; i < segs.length; i++) {
      const parent = `${WORKSPACE}/${segs.slice(0, i).join('/')}`;
      let st: PathStat | undefined;
      try {
        st = await this.client.statPath(this.containerId, parent);
      } catch (err) {
        return { path: rel, kind: 'other', size: 0, note: `could not stat "${segs[i - 1]}": ${errorMessage(err)}` };
      }
      if (!st) return { path: rel, kind: 'missing', size: 0, note: `"${segs[i - 1]}" does not exist${gone}` };
      if (isSymlinkMode(st.mode)) return { path: rel, kind: 'symlink', size: 0, note: `"${segs[i - 1]}" on the way is a symlink; links are never followed` };
      if (!isDirMode(st.mode)) return { path: rel, kind: 'other', size: 0, note: `"${segs[i - 1]}" on the way is not a directory` };
    }
    const abs = `${WORKSPACE}/${segs.join('/')}`;
    // The last component too: Podman's GET /archive follows a final symlink (it would export the target, read as root).
    let last: PathStat | undefined;
    try {
      last = await this.client.statPath(this.containerId, abs);
    } catch (err) {
      return { path: rel, kind: 'other', size: 0, note: `could not stat: ${errorMessage(err)}` };
    }
    if (!last) return { path: rel, kind: 'missing', size: 0, ...(gone ? { note: gone.slice(2) } : {}) };
    if (isSymlinkMode(last.mode)) return { path: rel, kind: 'symlink', size: last.size, linkTarget: last.linkTarget.slice(0, 4096), note: 'links are never followed' };
    let archive;
    try {
      archive = await this.client.getArchive(this.containerId, abs);
    } catch (err) {
      return { path: rel, kind: 'other', size: 0, note: `could not export: ${errorMessage(err)}` };
    }
    if (!archive) return { path: rel, kind: 'missing', size: 0, ...(gone ? { note: gone.slice(2) } : {}) };
    // The archive is the box's data: first entry only, bytes capped, links reported and never followed.
    const { entry, problem } = await readFirstEntry(archive.stream, { maxContentBytes: maxBytes, maxArchiveBytes: maxBytes + 64 * 1024, timeoutMs: 30_000 });
    if (!entry) return { path: rel, kind: 'other', size: archive.stat?.size ?? 0, note: problem ?? 'unreadable archive' };
    const expected = segs[segs.length - 1];
    if (entry.name.replace(/\/$/, '') !== expected) {
      return { path: rel, kind: 'other', size: entry.size, note: `the archive's first entry is "${entry.name.slice(0, 100)}", not "${expected}"; not exported` };
    }
    const target = (entry.linkTarget ?? '').slice(0, 4096);
    switch (entry.kind) {
      case 'file': {
        // The archive API does not carry the link count: read it from the host side of the workspace volume.
        // As for every backend, a regular file with other links is a hardlink, and is not read.
        const nlink = await this.hostNlink(segs);
        if (nlink !== undefined && nlink > 1) return { path: rel, kind: 'hardlink', size: entry.size, nlink, note: `regular file with ${nlink} links; not read` };
        const links = nlink !== undefined ? { nlink } : {};
        return entry.content
          ? { path: rel, kind: 'file', size: entry.size, content: entry.content, ...links }
          : { path: rel, kind: 'file', size: entry.size, note: entry.note ?? 'not read', ...links };
      }
      case 'directory':
        return { path: rel, kind: 'directory', size: entry.size };
      case 'symlink':
        return { path: rel, kind: 'symlink', size: entry.size, linkTarget: target, note: 'links are never followed' };
      case 'hardlink':
        return { path: rel, kind: 'hardlink', size: entry.size, linkTarget: target, note: 'tar hard-link entry; not followed' };
      case 'fifo':
        return { path: rel, kind: 'fifo', size: 0 };
      case 'device':
        return { path: rel, kind: 'device', size: 0, note: `tar entry type ${entry.tarType}` };
      default:
        return { path: rel, kind: 'other', size: entry.size, note: `tar entry type ${entry.tarType}; not exported` };
    }
  }

  /**
   * The link count of a workspace file, from the host's side of the volume (local daemons only): each
   * component is lstat'ed and a symlink anywhere gives up. Only a number is read, never content.
   */
  private async hostNlink(segs: readonly string[]): Promise<number | undefined> {
    const root = this.init.disk ? this.init.disk.work : this.volumeName !== undefined ? await this.init.backend.hostVolumeDir(this.volumeName) : undefined;
    if (root === undefined) return undefined;
    let cur = root;
    for (let i = 0; i < segs.length; i++) {
      cur = join(cur, segs[i] ?? '');
      const st = await lstat(cur).catch(() => undefined);
      if (!st || st.isSymbolicLink()) return undefined;
      if (i < segs.length - 1 && !st.isDirectory()) return undefined;
      if (i === segs.length - 1) return st.isFile() ? st.nlink : undefined;
    }
    return undefined;
  }

  /** Host pids of the box: the container's cgroup minus its keep-alive processes (runc), or the gVisor sandbox process tree. */
  async hostPids(): Promise<number[]> {
    const init = this.init.initPid;
    const cg = this.init.cgroup;
    if (init === undefined || !cg || this.stoppedWhy) return [];
    if (this.init.backend.gvisor) {
      // The box's processes live inside the sandbox (the Sentry, State.Pid) and its host stubs; the gofer is runsc machinery.
      return processTree(init);
    }
    const keepers = await this.keeperPids();
    return (await cg.pids()).filter((p) => !keepers.has(p));
  }

  private keepers: Map<number, number> | undefined;

  /** The container's init and keep-alive (pid → start time), recorded before the first exec. */
  private async keeperPids(): Promise<Set<number>> {
    const init = this.init.initPid;
    if (init === undefined) return new Set();
    if (!this.keepers) {
      this.keepers = new Map();
      for (const pid of await processTree(init)) {
        const s = await readStat(pid);
        if (s) this.keepers.set(pid, s.startTime);
      }
    }
    const out = new Set<number>();
    for (const [pid, start] of this.keepers) {
      // Same pid and start time: never mistake a box process that reused a keeper's pid for the keeper.
      if (await sameProcessAlive(pid, start)) out.add(pid);
    }
    return out;
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    this.assertUsable('exec');
    if (req.argv.length === 0) throw new SandcheckError('HARNESS', 'exec needs a non-empty argv');
    const env: string[] = [];
    for (const [k, v] of Object.entries(req.env ?? {})) {
      if (!ENV_NAME.test(k)) throw new SandcheckError('HARNESS', `invalid environment variable name "${k}"`);
      env.push(`${k}=${v}`);
    }
    const notRun = (startError: string): ExecResult => ({ exitCode: null, signal: null, startError, timedOut: false, oomKilled: false, outputTruncated: false });
    if (this.stoppedWhy) return notRun(`the environment's container is not running (${this.stoppedWhy})`);
    if (req.signal.aborted) return notRun('aborted before the program started');
    let finished!: () => void;
    const running: Running = { stop: () => Promise.resolve(), done: new Promise<void>((r) => (finished = r)) };
    this.running = running;
    try {
      await this.keeperPids();
      return await this.runExec(req, env, running);
    } finally {
      this.running = undefined;
      finished();
    }
  }

  private async runExec(req: ExecRequest, env: string[], running: Running): Promise<ExecResult> {
    const counters = new ExecCounters(this.init.cgroup, this.init.parent, !this.init.backend.gvisor);
    await counters.begin();
    const cwd = req.cwd ? `${WORKSPACE}/${workspaceSegments(req.cwd).join('/')}` : WORKSPACE;
    let execId: string;
    let sock: Duplex;
    try {
      execId = await this.client.createExec(this.containerId, {
        Cmd: [...req.argv],
        Env: env,
        User: this.execUser,
        WorkingDir: cwd,
        AttachStdin: req.stdin !== undefined,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
      sock = await this.client.startExec(execId, req.stdin !== undefined);
    } catch (err) {
      await this.noteContainerState();
      return { exitCode: null, signal: null, startError: `docker exec failed: ${errorMessage(err)}`, timedOut: false, oomKilled: false, outputTruncated: false };
    }
    this.coldStartMs ??= performance.now() - this.createdAt;

    let stoppedBy: StopReason | undefined;
    let stopping: Promise<void> | undefined;
    let ended = false;
    const stop = (why: StopReason): Promise<void> => {
      stoppedBy ??= why;
      stopping ??= this.killContainer(why).then(() => {
        // The daemon ends the attach connection once the processes are gone; never wait on it forever.
        setTimeout(() => {
          if (!ended) sock.destroy();
        }, STREAM_GRACE_MS).unref();
      });
      return stopping;
    };
    running.stop = stop;

    let stderrHead = '';
    const demux = new CappedDemux(
      req.maxOutputBytes,
      req.stdout,
      {
        write: (c) => {
          if (stderrHead.length < 2048) stderrHead += Buffer.from(c).toString('utf8', 0, 2048);
          req.stderr.write(c);
        },
      },
      () => void stop('output'),
    );
    const closed = new Promise<void>((resolve) => {
      sock.on('data', (c: Buffer) => demux.feed(c));
      sock.once('close', () => resolve());
      sock.once('end', () => resolve());
      sock.once('error', () => resolve());
    });
    if (req.stdin !== undefined) {
      sock.write(Buffer.from(req.stdin));
      sock.end();
    }
    const timer = setTimeout(() => void stop('timeout'), Math.min(2 ** 31 - 1, Math.max(1, req.timeoutMs)));
    const onAbort = (): void => void stop('abort');
    req.signal.addEventListener('abort', onAbort, { once: true });
    if (req.signal.aborted) onAbort();
    const sampler = setInterval(() => void counters.sample(), SAMPLE_MS);
    // If the whole container dies under the exec (a gVisor sandbox killed by the OOM killer, our own kill),
    // runsc's exec can keep the attach connection open: a dead container ends the exec here.
    let deadSince: number | undefined;
    let checking = false;
    const deathWatch = setInterval(() => {
      if (checking || ended) return;
      checking = true;
      void this.containerAlive()
        .then((alive) => {
          if (alive) deadSince = undefined;
          else {
            deadSince ??= performance.now();
            if (performance.now() - deadSince >= DEAD_GRACE_MS) sock.destroy();
          }
        })
        .finally(() => {
          checking = false;
        });
    }, DEATH_POLL_MS);

    await closed;
    ended = true;
    clearTimeout(timer);
    clearInterval(sampler);
    clearInterval(deathWatch);
    req.signal.removeEventListener('abort', onAbort);
    if (stopping) await stopping;
    sock.destroy();

    const execState = await this.finalExecState(execId);
    const container = await this.noteContainerState();
    const resources = await counters.end().catch(() => undefined);
    const died = container !== undefined && !container.Running;
    const oomKilled: Tristate = counters.available ? counters.oomSeen || (died && container.OOMKilled) : died ? container.OOMKilled : 'unknown';
    const code = execState?.ExitCode ?? null;
    const base = {
      timedOut: stoppedBy === 'timeout',
      oomKilled,
      outputTruncated: demux.truncated,
      ...(resources ? { resources } : {}),
    };
    if (stoppedBy !== undefined) {
      // The kill reached the program unless it had already ended on its own (exit code 0..128).
      const killed = code === null || code > 128;
      return { ...base, exitCode: code, signal: killed ? 'SIGKILL' : null };
    }
    if (code === 126 || code === 127) {
      const m = /OCI runtime exec failed[^\n]*/.exec(stderrHead);
      if (m) return { ...base, exitCode: code, signal: null, startError: m[0].slice(0, 300) };
    }
    if (code === null && died) {
      // The whole container went down under the exec (a gVisor sandbox killed by the OOM killer, say).
      return { ...base, exitCode: null, signal: container.OOMKilled || container.ExitCode === 137 ? 'SIGKILL' : null };
    }
    // 137 is 128 + SIGKILL; with the OOM counter it is the OOM killer's SIGKILL.
    return { ...base, exitCode: code, signal: code === 137 && oomKilled === true ? 'SIGKILL' : null };
  }

  /** Is the container's main process still there? Read from /proc when the daemon is local, else asked. */
  private async containerAlive(): Promise<boolean> {
    const pid = this.init.initPid;
    if (pid !== undefined) return sameProcessAlive(pid, this.init.initStartTime);
    try {
      return (await this.client.inspectContainer(this.containerId))?.State.Running === true;
    } catch {
      return true; // a daemon that does not answer is not evidence of death
    }
  }

  private async finalExecState(execId: string): Promise<{ ExitCode: number | null } | undefined> {
    for (let i = 0; i < 40; i++) {
      try {
        const s = await this.client.inspectExec(execId);
        if (!s.Running) return s;
      } catch {
        return undefined;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    return undefined;
  }

  /** Inspects the container and remembers when it stopped. */
  private async noteContainerState(): Promise<ContainerState | undefined> {
    let d;
    try {
      d = await this.client.inspectContainer(this.containerId);
    } catch {
      return undefined;
    }
    if (!d) {
      this.stoppedWhy ??= 'the container is gone';
      return undefined;
    }
    if (!d.State.Running) this.stoppedWhy ??= d.State.OOMKilled ? 'killed by the OOM killer' : `exit ${d.State.ExitCode}`;
    return d.State;
  }

  /** Stops everything in the environment at once: SIGKILL to the container (and, if the daemon fails us, to its host pids). */
  private async killContainer(why: StopReason): Promise<void> {
    this.stoppedWhy ??= why === 'timeout' ? "killed at the policy's wall clock" : why === 'output' ? 'killed at the output cap' : why === 'abort' ? 'killed on the harness\'s request' : 'destroyed';
    try {
      await this.client.killContainer(this.containerId);
    } catch {
      const cg = this.init.cgroup;
      if (cg) for (const pid of await cg.pids()) killQuietly(pid);
    }
  }

  destroy(): Promise<Leftovers> {
    return this.teardownOnce.run(() => this.teardown());
  }

  private async teardown(): Promise<Leftovers> {
    const items: string[] = [];
    await stopRunningExec(this.running, STOP_WAIT_MS);
    const short = this.containerId.slice(0, 12);
    try {
      await this.client.removeContainer(this.containerId);
    } catch (err) {
      items.push(`container ${short} could not be removed: ${errorMessage(err)}`);
    }
    try {
      if (await this.client.inspectContainer(this.containerId)) items.push(`container ${short} still exists after a forced remove`);
    } catch (err) {
      items.push(`container ${short}: cannot verify its removal: ${errorMessage(err)}`);
    }
    if (this.volumeName !== undefined) {
      try {
        await this.client.removeVolume(this.volumeName);
        if (await this.client.volumeExists(this.volumeName)) items.push(`workspace volume of environment ${this.id} still exists after remove`);
      } catch (err) {
        items.push(`workspace volume of environment ${this.id} could not be removed: ${errorMessage(err)}`);
      }
    }
    if (this.client.local && !this.init.backend.gvisor) {
      // A witness that does not trust the daemon: box processes carry the environment marker.
      for (const p of await killMarkedProcesses(ENV_MARKER, this.id)) items.push(`process ${p.pid} (${p.comm}) of the environment outlived its container; killed`);
    }
    // Last: nothing of the environment holds the mount now (umount detaches the loop device; the image goes).
    if (this.init.disk) items.push(...(await removeDiskWorkspace(this.init.disk, `environment ${this.id}`)));
    if (this.init.parent) items.push(...(await this.init.parent.remove()));
    return { items };
  }
}

/** Go's os.FileMode bits as the archive API reports them. */
const GO_MODE_DIR = 2 ** 31;
const GO_MODE_SYMLINK = 2 ** 27;
export const isDirMode = (mode: number): boolean => Math.floor(mode / GO_MODE_DIR) % 2 === 1;
export const isSymlinkMode = (mode: number): boolean => Math.floor(mode / GO_MODE_SYMLINK) % 2 === 1;

