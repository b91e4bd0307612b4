import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { Tristate } from '../../model/observation.js';
import type { Policy } from '../../model/policy.js';
import type { Environment, ExecRequest, ExecResult, GotFile, Leftovers, PutFile } from '../../model/backend-contract.js';
import { processTree, readStat, sameProcessAlive } from '../shared/host-proc.js';
import { killMarkedProcesses, killQuietly } from '../shared/process-kill.js';
import { stopRunningExec, TeardownOnce } from '../shared/teardown.js';
import type { EnvRoot } from '../bwrap/workspace.js';
import { type ContainerState, type DockerClient } from './client.js';
import { CappedDemux } from './demux.js';
import { ExecCounters, type ContainerCgroup, type ParentCgroup } from './cgroups.js';
import { getWorkspaceFile, getWorkspaceFilesAtOnce, type FileSource } from './docker-get-file.js';
import { removeDiskWorkspace } from './disk-workspace.js';
import { ENV_MARKER } from './labels.js';
import { WORKSPACE } from './profiles.js';
import { packEntries, workspaceSegments, type PackEntry } from './tar.js';

const MIB = 1024 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Counters are sampled this often while an exec runs (the container's cgroup vanishes if it dies). */
const SAMPLE_MS = 50;
/** After a kill, how long the attach connection may take to end before we let go of it. */
const STREAM_GRACE_MS = 5000;
const STOP_WAIT_MS = 15_000;
/** How often an exec checks that its container still lives, and how long after its death the exec is let go. */
const DEATH_POLL_MS = 200;
const DEAD_GRACE_MS = 300;

type StopReason = 'timeout' | 'output' | 'abort' | 'destroy';

/** What an environment needs of the backend that made it (DockerBackend is one). */
export interface DockerBoxHost {
  client: DockerClient;
  readonly gvisor: boolean;
  readonly boxUser: { user: string; uid: number };
  hostVolumeDir(volumeName: string): Promise<string | undefined>;
}

export interface EnvInit {
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
  backend: DockerBoxHost;
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

  get programInUserSpaceKernel(): boolean {
    return this.init.backend.gvisor;
  }

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
    // Many artifacts: one archive of the workspace (within the export's total, plus headers) answers most of them.
    const atOnce =
      paths.length > 1 && !this.stoppedWhy
        ? await getWorkspaceFilesAtOnce(this.fileSource(), paths, maxFile, maxTotal + paths.length * 4096 + MIB)
        : new Map<string, GotFile>();
    for (const p of paths) {
      const got = atOnce.get(p) ?? (await this.getOne(p, maxFile));
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

  private fileSource(): FileSource {
    const gone = this.stoppedWhy && !this.init.disk ? `; the environment's container stopped (${this.stoppedWhy}) and its tmpfs workspace went with it` : '';
    const hostRoot = (): Promise<string | undefined> =>
      this.init.disk
        ? Promise.resolve(this.init.disk.work)
        : this.volumeName !== undefined
          ? this.init.backend.hostVolumeDir(this.volumeName)
          : Promise.resolve(undefined);
    return { client: this.client, containerId: this.containerId, gone, hostRoot };
  }

  private getOne(rel: string, maxBytes: number): Promise<GotFile> {
    return getWorkspaceFile(this.fileSource(), rel, maxBytes);
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
    const notRun = (startError: string): ExecResult => ({
      exitCode: null,
      signal: null,
      startError,
      timedOut: false,
      oomKilled: false,
      outputTruncated: false,
    });
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
      return {
        exitCode: null,
        signal: null,
        startError: `docker exec failed: ${errorMessage(err)}`,
        timedOut: false,
        oomKilled: false,
        outputTruncated: false,
      };
    }
    this.coldStartMs ??= performance.now() - this.createdAt;

    let stoppedBy: StopReason | undefined;
    let stopping: Promise<void> | undefined;
    let ended = false;
    const stop = (why: StopReason): Promise<void> => {
      stoppedBy ??= why;
      stopping ??= this.killContainer(why).then(() => {
        // Read again (an output stop paused the stream): what is left is dropped, and the connection can end.
        sock.resume();
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
      () => {
        // No more reading past the budget: the program's writes block on a full pipe until the kill lands, so a flood
        // cannot run to its end (and exit 0) faster than the container is killed.
        sock.pause();
        void stop('output');
      },
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
      // The kill reached the program unless it had already ended on its own (exit code 0..128). Docker records 126 for
      // an exec whose output copy broke (the container killed under a blocked write): killed, when the container is dead.
      const copyBroke = code === 126 && died;
      const killed = code === null || code > 128 || copyBroke;
      return { ...base, exitCode: copyBroke ? null : code, signal: killed ? 'SIGKILL' : null };
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
    this.stoppedWhy ??=
      why === 'timeout'
        ? "killed at the policy's wall clock"
        : why === 'output'
          ? 'killed at the output cap'
          : why === 'abort'
            ? "killed on the harness's request"
            : 'destroyed';
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
      for (const p of await killMarkedProcesses(ENV_MARKER, this.id))
        items.push(`process ${p.pid} (${p.comm}) of the environment outlived its container; killed`);
    }
    // Last: nothing of the environment holds the mount now (umount detaches the loop device; the image goes).
    if (this.init.disk) items.push(...(await removeDiskWorkspace(this.init.disk, `environment ${this.id}`)));
    if (this.init.parent) items.push(...(await this.init.parent.remove()));
    return { items };
  }
}

/** Go's os.FileMode bits as the archive API reports them. */
