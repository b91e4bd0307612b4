import { randomBytes } from 'node:crypto';
import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { Policy } from '../../model/policy.js';
import type { BackendFact } from '../../model/environment.js';
import { visibleLine } from '../../core/clean-text.js';
import { RUN_MARKER } from '../../model/backend-contract.js';
import type { Backend, BackendContext, LabHandle, Capabilities, Environment, Leftovers } from '../../model/backend-contract.js';
import { readStat } from '../shared/host-proc.js';
import { selfOwner } from '../shared/process-owner.js';
import { type DaemonInfo, type DockerClient } from './client.js';
import { canUseV1Parents, createParentCgroup, locateContainerCgroup, PARENT_PREFIX, type ParentCgroup } from './cgroups.js';
import { formatOwner } from './host.js';
import { DEFAULT_LAB_DAEMON_ROOT, privateDaemonProblem, startLabDaemon, sweepStaleLabDaemons, type LabDaemon } from './lab-daemon.js';
import type { ResolvedDockerOptions } from './options.js';
import { DockerEnvironment } from './docker-environment.js';
import { sweepDockerLeftovers } from './sweep.js';
import type { EnvRoot } from '../bwrap/workspace.js';
import { createDiskWorkspace, DEFAULT_DISK_STATE_DIR, diskImageSupport, removeDiskWorkspace, sweepDiskWorkspaces } from './disk-workspace.js';
import { capabilitiesFor, hostConfigFor, isGvisor, PROFILES, userOf, WORKSPACE, workspaceVolumeOptions, type Profile } from './profiles.js';

import { ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN } from './labels.js';
import { markOwnCounters } from '../own-counters.js';

export { ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN };

const MIB = 1024 * 1024;
const SAFE_ID = /^[a-z0-9][a-z0-9_.-]{0,40}$/;
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** How long preflight waits for the daemon. */
const PING_TIMEOUT_MS = 1500;

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
  "daemon inside the run's lab (private mode, the default: needs root), or run `dockerd --host unix:///run/sandcheck-docker.sock &` and pass that socket " +
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
    markOwnCounters(this);
    const own = parts.opts.container;
    this.profile = own
      ? { ...own, name: own.name ?? 'docker', description: own.description ?? 'your own container configuration' }
      : PROFILES[parts.opts.profile ?? 'docker-hardened'];
    this.gvisor = isGvisor(this.profile, parts.opts.gvisorRuntime);
    this.boxUser = userOf(this.profile, parts.opts.boxUid);
    this.name = this.profile.name;
    this.mode = parts.client ? 'external' : 'private';
    if (parts.client) this.conn = { client: parts.client, netnsPath: parts.opts.labNetnsPath, daemon: undefined };
    const where =
      this.mode === 'private'
        ? 'a private dockerd started for the run inside its lab'
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
      this.workspaceNote =
        c.kind === 'disk-image' ? '; workspace: sized ext4 image' : `; workspace: sized tmpfs volume${c.reason ? ` (not a disk image: ${c.reason})` : ''}`;
      return c;
    });
    return this.workspaceChoice;
  }

  private async chooseWorkspace(): Promise<WorkspaceChoice> {
    const { opts } = this.parts;
    if (opts.workspace === 'tmpfs') return { kind: 'tmpfs', reason: undefined };
    const hint = 'set workspace: "tmpfs" (its pages count against the memory limit, so disk-fill is inconclusive when memory is the smaller limit)';
    if (opts.workspace === undefined && this.mode === 'external' && opts.labNetnsPath === undefined) {
      return { kind: 'tmpfs', reason: 'the daemon is not one sandcheck knows to share this machine\'s mounts (set workspace: "disk-image" for a local one)' };
    }
    if (this.conn && !this.conn.client.local) {
      if (opts.workspace === 'disk-image')
        throw new SandcheckError(
          'BACKEND_UNAVAILABLE',
          `a disk-image workspace is mounted on this machine, and the daemon at ${this.conn.client.endpoint} is not local`,
          { hint },
        );
      return { kind: 'tmpfs', reason: 'the daemon is not on this machine' };
    }
    const support = await diskImageSupport();
    if ('problem' in support) {
      if (opts.workspace === 'disk-image')
        throw new SandcheckError('BACKEND_UNAVAILABLE', `a disk-image workspace cannot be made: ${support.problem}`, { hint });
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
    return capabilitiesFor(
      this.profile,
      policy,
      { inLab: this.sealed, endpoint: this.conn?.client.endpoint ?? 'private' },
      this.parts.opts.assumePolicy,
      this.parts.opts.gvisorRuntime,
    );
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
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the Docker daemon at ${this.client.endpoint} does not answer: ${errorMessage(err)}`, {
        hint: UNAVAILABLE_HINT,
        cause: err,
      });
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
      if (info.Podman) return 'Podman puts its conmon monitors under the cgroup parent';
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
        disk = await createDiskWorkspace({
          stateDir: this.diskStateDir,
          scratchDir: ctx.scratchDir,
          runId: ctx.runId,
          envId,
          bytes: policy.resources.diskMb * MIB,
          mkfs: workspace.mkfs,
        });
      } else if (volumeName !== undefined) {
        await this.client.createVolume({ Name: volumeName, Driver: 'local', DriverOpts: workspaceVolumeOptions(policy), Labels: labels });
        volumeMade = true;
      }
      containerId = await this.client.createContainer({
        name,
        Image: image,
        Entrypoint: [...KEEPALIVE],
        Cmd: [],
        Env: boxEnv(this.profile.Config.Env ?? [], [
          `PATH=${BASE_PATH}`,
          `HOME=${WORKSPACE}`,
          'LANG=C.UTF-8',
          `${RUN_MARKER}=${ctx.runId}`,
          `${ENV_MARKER}=${envId}`,
        ]),
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
        throw new SandcheckError(
          'HARNESS',
          `the environment's container stopped right after start (${details?.State.Error || `exit ${details?.State.ExitCode ?? '?'}`})`,
        );
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
