import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { SandcheckError } from '../../core/errors.js';
import type { Tristate } from '../../model/observation.js';
import type { Policy } from '../../model/policy.js';
import { RUN_MARKER } from '../../model/backend-contract.js';
import { procLink } from '../../core/proc-files.js';
import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import type {
  BackendContext,
  ByteSink,
  Environment,
  ExecRequest,
  ExecResult,
  GotFile,
  Leftovers,
  PutFile,
  ResourceReport,
} from '../../model/backend-contract.js';
import { describeEntry } from '../file-entry.js';
import type { CgroupCounters } from '../../lab/cgroup-counters.js';
import { commOf, processTree } from '../shared/host-proc.js';
import { killMarkedProcesses, killQuietly, killTree } from '../shared/process-kill.js';
import { stopRunningExec, TeardownOnce } from '../shared/teardown.js';
import { segmentsOf } from '../shared/workspace-path.js';
import { commandArgv, launcherArgs, LAUNCH_CGROUP_FAILED, STATUS_FD, type BoxPlan } from './argv.js';
import type { BwrapRuntime } from './runtime.js';
import type { EnvCgroup } from './cgroups.js';
import { inheritableFds, readIdentity, type ProcIdentity } from './host-proc.js';
import { StatusReader } from './status.js';
import { boxSeccompFilter } from './seccomp.js';
import { protectedBinds, protectedPathsOf } from './protected-paths.js';
import { denyReadOf, hiddenPaths } from './deny-read.js';
import { getFile, putFile, removeEnvRoot, type EnvRoot, type Ownership } from './workspace.js';

/** Every box process carries these (not secrets): the harness can find strays by them. */
export const ENV_MARKER = 'SANDCHECK_ENV';
/** The box's seccomp filter, written into the environment's own directory at create. */
export const SECCOMP_FILE = 'seccomp.bpf';
const MIB = 1024 * 1024;
/** After the launcher exited, how long a straggler may hold the output pipes before we let go of them. */
const STDIO_GRACE_MS = 500;
/** How long destroy waits for an exec it stopped to wind down. */
const STOP_WAIT_MS = 10_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface Running {
  launcherPid: number | undefined;
  status: StatusReader;
  stop(why: StopReason): Promise<void>;
  done: Promise<unknown>;
}

type StopReason = 'timeout' | 'output' | 'abort' | 'destroy' | 'privilege';

interface OutputState {
  forwarded: number;
  truncated: boolean;
}

export class BwrapEnvironment implements Environment {
  private readonly readOnly = new Set<string>();
  private running: Running | undefined;
  private readonly teardownOnce = new TeardownOnce();

  constructor(
    readonly id: string,
    readonly cgroupName: string,
    private readonly rt: BwrapRuntime,
    private readonly policy: Policy,
    private readonly ctx: BackendContext,
    private readonly root: EnvRoot,
    private readonly cg: EnvCgroup | undefined,
  ) {}

  /** The host directory behind /work (the naive exporter's positive controls read links there). */
  get hostWorkspace(): string {
    return this.root.work;
  }

  private get box(): Ownership | undefined {
    return this.rt.dropToUid === undefined ? undefined : { uid: this.rt.dropToUid, gid: this.rt.dropToUid };
  }

  private assertUsable(what: string): void {
    if (this.teardownOnce.begun) throw new SandcheckError('HARNESS', `${what} on a destroyed environment`);
    if (this.running) throw new SandcheckError('HARNESS', `${what} while an exec of this environment runs`);
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    this.assertUsable('putFiles');
    for (const input of files) {
      // readOnlyInputs 'ignored' (a deliberate weakening): read-only inputs are put like writable ones.
      const f = this.rt.opts.readOnlyInputs === 'ignored' && input.readOnly ? { ...input, readOnly: false } : input;
      const rel = await putFile(this.root.work, f, this.box);
      if (f.readOnly) this.readOnly.add(rel);
      else this.readOnly.delete(rel);
    }
  }

  /**
   * The download API: every path classified with lstat and never followed (see getFile). Regular files
   * are read up to the per-file cap (the caller's, and at most the policy's maxFileMb). The policy's
   * maxTotalMb bounds what is held: sizes come first, and when the regular files asked for (each within
   * the cap) come to more, none of them is read (a careful download API refuses such a transfer before
   * it starts); otherwise files read only while the bytes read stay within it (one may have grown since).
   * The file count and the refusals are the harness's exporter's, so that one place decides what leaves
   * the box.
   */
  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    this.assertUsable('getFiles');
    const { maxFileMb, maxTotalMb } = this.policy.exports;
    const maxFile = Math.max(0, Math.min(options.maxBytesPerFile, maxFileMb * MIB));
    const total = Math.floor(maxTotalMb * MIB);
    // downloadApi 'naive' (a deliberate weakening): reads through links, on the host.
    const naive = this.rt.opts.downloadApi === 'naive';
    const one = (p: string, cap: number): Promise<GotFile> =>
      naive ? describeEntry(this.root.work, p, cap, { followLinks: true }) : getFile(this.root.work, p, cap);
    const sized: GotFile[] = [];
    for (const p of paths) sized.push(await one(p, 0));
    const declared = sized.reduce((sum, g) => sum + (g.kind === 'file' && g.size <= maxFile ? g.size : 0), 0);
    const skipFiles = declared > total;
    let left = total;
    const out: GotFile[] = [];
    for (const [i, p] of paths.entries()) {
      const first = sized[i];
      if (skipFiles && first?.kind === 'file') {
        const note =
          first.size <= maxFile
            ? `not read: the files asked for come to ${declared} bytes, past the policy's ${maxTotalMb} MB in total`
            : `larger than ${maxFile} bytes; not read`;
        out.push({ path: first.path, kind: first.kind, size: first.size, note });
        continue;
      }
      const cap = Math.min(maxFile, left);
      const got = await one(p, cap);
      if (got.content) left -= got.content.length;
      else if (got.kind === 'file' && got.size <= maxFile && got.size > cap) got.note = `not read: past the policy's ${maxTotalMb} MB in total`;
      out.push(got);
    }
    return out;
  }

  async hostPids(): Promise<number[]> {
    const r = this.running;
    const child = r?.status.childPid;
    if (!r || child === undefined) return [];
    const members = this.cg ? await this.cg.pids() : r.launcherPid !== undefined ? await processTree(r.launcherPid) : [];
    // Leave out bwrap itself; with a pid namespace also its init (pid 1 inside), which is bwrap code too.
    return members.filter((p) => p !== r.launcherPid && !(this.rt.opts.unsharePid && p === child));
  }

  private async plan(req: ExecRequest): Promise<BoxPlan> {
    const env: [string, string][] = [];
    for (const [k, v] of Object.entries(req.env ?? {})) {
      if (!ENV_NAME.test(k)) throw new SandcheckError('HARNESS', `invalid environment variable name "${k}"`);
      env.push([k, v]);
    }
    env.push([RUN_MARKER, this.ctx.runId], [ENV_MARKER, this.id]);
    const lab = this.ctx.lab;
    return {
      tools: this.rt.tools,
      uid: this.rt.dropToUid,
      unsharePid: this.rt.opts.unsharePid,
      unshareUser: this.rt.opts.unshareUser,
      shareNetwork: this.rt.opts.shareNetwork,
      netnsPath: lab?.netnsPath,
      resolvConf: lab && this.rt.opts.shareNetwork ? this.root.resolvConf : undefined,
      workHost: this.root.work,
      tmpHost: this.root.mounted ? this.root.tmp : undefined,
      tmpSizeBytes: this.policy.resources.diskMb * MIB,
      readOnlyFiles: [...this.readOnly],
      ...(this.rt.opts.protectedPaths === 'read-only' ? { protectedBinds: (await protectedBinds(this.root.work, protectedPathsOf(this.policy))).binds } : {}),
      ...(this.rt.opts.denyReadPaths === 'hidden' ? { hiddenPaths: await hiddenPaths(this.root.work, denyReadOf(this.policy)) } : {}),
      extraBinds: this.rt.opts.extraBinds,
      cwd: req.cwd ? segmentsOf(req.cwd).join('/') : '',
      env,
      argv: req.argv,
      statusFd: STATUS_FD,
      seccomp: this.seccompFile !== undefined,
    };
  }

  /** The filter file when this environment has one (the launcher opens it for bwrap --seccomp). */
  private get seccompFile(): string | undefined {
    return this.rt.opts.seccomp && 'filter' in boxSeccompFilter() ? join(this.root.root, SECCOMP_FILE) : undefined;
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    this.assertUsable('exec');
    if (req.argv.length === 0) throw new SandcheckError('HARNESS', 'exec needs a non-empty argv');
    const plan = await this.plan(req);
    if (req.signal.aborted) {
      return { exitCode: null, signal: null, startError: 'aborted before the box started', timedOut: false, oomKilled: false, outputTruncated: false };
    }
    let finished!: () => void;
    const running: Running = {
      launcherPid: undefined,
      status: new StatusReader(),
      stop: () => Promise.resolve(),
      done: new Promise<void>((resolve) => (finished = resolve)),
    };
    this.running = running;
    try {
      const baseline = this.cg ? await this.cg.beginExec() : undefined;
      const outcome = await this.runBox(req, plan, running);
      const resources = this.cg && baseline ? await this.report(baseline) : undefined;
      return this.result(outcome, resources);
    } finally {
      this.running = undefined;
      finished();
    }
  }

  private async report(baseline: CgroupCounters): Promise<ResourceReport | undefined> {
    try {
      return await this.cg?.report(baseline);
    } catch {
      return undefined;
    }
  }

  private result(o: Outcome, resources: ResourceReport | undefined): ExecResult {
    const oomKilled: Tristate = this.cg?.watchesOom && resources?.oomKills !== undefined ? resources.oomKills > 0 : 'unknown';
    const base = {
      timedOut: o.stoppedBy === 'timeout',
      oomKilled,
      outputTruncated: o.output.truncated,
      ...(resources ? { resources } : {}),
    };
    if (o.privilegeProblem !== undefined) {
      return { ...base, exitCode: null, signal: 'SIGKILL', startError: `refused to run: ${o.privilegeProblem}` };
    }
    if (o.spawnError !== undefined) return { ...base, exitCode: null, signal: null, startError: `cannot start the launcher: ${o.spawnError}` };
    if (o.status.exitCode !== undefined) return { ...base, exitCode: o.status.exitCode, signal: null };
    if (o.status.childPid === undefined && o.stoppedBy === undefined) {
      const why =
        o.status.launchError ??
        (o.exit.code === LAUNCH_CGROUP_FAILED
          ? 'cannot join the environment cgroup'
          : `bwrap ended (${o.exit.signal ?? `exit ${o.exit.code}`}) before the box existed`);
      const detail = o.stderrHead.trim().split('\n')[0]?.slice(0, 300);
      return { ...base, exitCode: o.exit.code, signal: o.exit.signal, startError: detail ? `${why}: ${detail}` : why };
    }
    return { ...base, exitCode: o.exit.code, signal: o.exit.signal };
  }

  private async runBox(req: ExecRequest, plan: BoxPlan, running: Running): Promise<Outcome> {
    const command = commandArgv(plan);
    // Descriptors the harness inherited from its own parent would otherwise pass straight into the box.
    const stdio: (number | 'pipe' | 'ignore')[] = [req.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe', 'pipe'];
    const leaked = (await inheritableFds()).filter((fd) => fd > STATUS_FD);
    const devNull = leaked.length > 0 ? openSync('/dev/null', 'r') : undefined;
    for (const fd of leaked) {
      for (let i = stdio.length; i < fd; i++) stdio.push('ignore');
      stdio[fd] = devNull ?? 'ignore';
    }
    // Plain spawn (not execa): the extra descriptors need raw fd numbers. If the harness dies, bwrap gets
    // SIGKILL (setpriv --pdeathsig) and --die-with-parent takes the box down with it.
    const child = spawn(this.rt.tools.sh, launcherArgs(this.cg?.procsFiles ?? [], command, this.seccompFile), {
      // The fix for bwrap's PID-1 leak: the launcher (and so bwrap and its init) get an empty environment.
      env: this.rt.opts.envFix === 'none' ? { ...this.ctx.controllerEnv } : {},
      cwd: '/',
      stdio,
    });
    const exitP = new Promise<{ code: number | null; signal: string | null; error?: string }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', (err) => resolve({ code: null, signal: null, error: err.message }));
    });
    const closeP = new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.once('error', () => resolve());
    });
    if (devNull !== undefined) closeSync(devNull);
    running.launcherPid = child.pid;
    const status = running.status;
    const output: OutputState = { forwarded: 0, truncated: false };
    let stoppedBy: StopReason | undefined;
    let exited = false;
    let privilegeProblem: string | undefined;
    let stderrHead = '';
    let stopping: Promise<void> | undefined;
    const stop = (why: StopReason): Promise<void> => {
      stoppedBy ??= why;
      stopping ??= this.killBox(running.launcherPid, () => exited);
      return stopping;
    };
    running.stop = stop;

    const capped = this.rt.opts.outputCap;
    const sink = (target: ByteSink, isErr: boolean) => (chunk: Buffer) => {
      if (isErr && stderrHead.length < 1024 && status.childPid === undefined) stderrHead += chunk.toString('utf8', 0, 1024);
      if (!capped) {
        // outputCap: false (a deliberate weakening): everything is passed on; only the harness can stop it.
        target.write(chunk);
        output.forwarded += chunk.length;
        return;
      }
      if (output.truncated) return; // drained, never forwarded
      const room = req.maxOutputBytes - output.forwarded;
      if (chunk.length <= room) {
        target.write(chunk);
        output.forwarded += chunk.length;
        return;
      }
      if (room > 0) target.write(chunk.subarray(0, room));
      output.forwarded += Math.max(0, room);
      output.truncated = true;
      void stop('output');
    };
    child.stdout?.on('data', sink(req.stdout, false));
    child.stderr?.on('data', sink(req.stderr, true));
    const statusStream = child.stdio[3] as Readable | undefined;
    statusStream?.on('data', (c: Buffer) => status.feed(c));
    statusStream?.on('end', () => status.end());
    if (req.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(req.stdin));
    }

    // Fail closed on identity: the host must see the box's uid and no capabilities, or the box dies.
    status.onChildPid((pid) => {
      void this.checkIdentity([running.launcherPid, pid]).then((problem) => {
        if (problem !== undefined && !exited) {
          privilegeProblem = problem;
          void stop('privilege');
        }
      });
    });

    // wallClock: false (a deliberate weakening): no timer of our own; only the harness's abort stops the box.
    const timer = this.rt.opts.wallClock ? setTimeout(() => void stop('timeout'), Math.min(2 ** 31 - 1, Math.max(1, req.timeoutMs))) : undefined;
    const onAbort = (): void => void stop('abort');
    req.signal.addEventListener('abort', onAbort, { once: true });

    const exit = await exitP;
    exited = true;
    clearTimeout(timer);
    req.signal.removeEventListener('abort', onAbort);
    // Nothing of the box outlives its exec: whatever is still in the cgroup (or carries the marker) dies now.
    await this.killBox(undefined, () => true);
    const grace = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      statusStream?.destroy();
    }, STDIO_GRACE_MS);
    await closeP;
    clearTimeout(grace);
    status.end();
    if (stopping) await stopping;
    return {
      exit: { code: exit.code, signal: exit.signal },
      ...(exit.error !== undefined && child.pid === undefined ? { spawnError: exit.error } : {}),
      status,
      stoppedBy,
      output,
      stderrHead,
      ...(privilegeProblem !== undefined ? { privilegeProblem } : {}),
    };
  }

  /**
   * Host view of the box's first processes. Uids must be the box uid. Capabilities count only in the host's
   * user namespace: bwrap's child holds capabilities inside its own new user namespace while it sets up
   * (they grant nothing on the host), so CapEff is judged only for processes in the initial namespace.
   */
  private async checkIdentity(pids: (number | undefined)[]): Promise<string | undefined> {
    const want = this.rt.dropToUid;
    if (want === undefined) return undefined;
    const hostUserNs = await userNamespaceOf('self');
    for (const pid of pids) {
      if (pid === undefined) continue;
      const id: ProcIdentity | undefined = await readIdentity(pid);
      if (!id) continue; // already gone
      if (id.uids.some((u) => u !== want) || id.gids.some((g) => g !== want)) {
        return `the host sees box process ${pid} as uid ${id.uids.join('/')}, not ${want}`;
      }
      const ns = await userNamespaceOf(String(pid));
      if (id.capEff !== 0n && ns !== undefined && ns === hostUserNs) {
        return `box process ${pid} holds capabilities in the host user namespace (CapEff ${id.capEff.toString(16)})`;
      }
    }
    return undefined;
  }

  /**
   * Stops the box: through the cgroup when there is one (freeze, SIGKILL all, thaw), else by killing the
   * launcher's process tree; in both cases also anything carrying this environment's marker.
   */
  private async killBox(launcherPid: number | undefined, launcherExited: () => boolean): Promise<void> {
    if (this.cg) {
      await this.cg.killAll();
    } else if (launcherPid !== undefined && !launcherExited()) {
      await killTree(launcherPid);
    }
    if (launcherPid !== undefined && !launcherExited()) killQuietly(launcherPid);
    // teardown 'launcher-tree' (a deliberate weakening) stops here: whatever left the launcher's tree lives on.
    if (!this.cg && this.rt.opts.teardown === 'thorough') {
      for (const p of await findProcessesWithEnvMarker(ENV_MARKER, this.id)) killQuietly(p.pid);
    }
  }

  destroy(): Promise<Leftovers> {
    return this.teardownOnce.run(() => this.teardown());
  }

  private async teardown(): Promise<Leftovers> {
    const items: string[] = [];
    await stopRunningExec(this.running, STOP_WAIT_MS);
    if (this.cg) {
      const alive = await this.cg.pids();
      for (const pid of alive) items.push(`process ${pid} (${await commOf(pid)}) was still in the environment's cgroup at destroy; killed`);
      const left = alive.length > 0 ? await this.cg.killAll() : [];
      for (const pid of left) items.push(`process ${pid} (${await commOf(pid)}) survived SIGKILL in the environment's cgroup`);
    }
    // A second witness that does not trust the cgroup: box processes carry the environment marker
    // (skipped by teardown 'launcher-tree', the deliberately weakened variant).
    const marked = this.rt.opts.teardown === 'thorough' ? await killMarkedProcesses(ENV_MARKER, this.id) : [];
    for (const p of marked) items.push(`process ${p.pid} (${p.comm}) of the environment was outside its cgroup at destroy; killed`);
    if (this.cg) items.push(...(await this.cg.remove()));
    items.push(...(await removeEnvRoot(this.root.root, this.root.mounted, this.cgroupName, this.root.image)));
    return { items };
  }
}

async function userNamespaceOf(pid: string): Promise<string | undefined> {
  return procLink(`/proc/${pid}/ns/user`);
}

interface Outcome {
  exit: { code: number | null; signal: string | null };
  spawnError?: string;
  status: StatusReader;
  stoppedBy: StopReason | undefined;
  output: OutputState;
  stderrHead: string;
  privilegeProblem?: string;
}
