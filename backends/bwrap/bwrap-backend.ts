import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { readFile, readlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { SandcheckError, errorMessage } from '../../harness/errors.js';
import type { Tristate } from '../../harness/model/observation.js';
import type { Policy } from '../../harness/model/policy.js';
import { RUN_MARKER } from '../../harness/run-context.js';
import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import type {
  Backend,
  BackendContext,
  ByteSink,
  Capabilities,
  Environment,
  ExecRequest,
  ExecResult,
  GotFile,
  Leftovers,
  PolicyItem,
  PutFile,
  ResourceReport,
} from '../contract.js';
import { describeEntry } from '../file-entry.js';
import type { CgroupCounters } from '../shared/cgroup-counters.js';
import { commOf, processTree } from '../shared/host-proc.js';
import { killMarkedProcesses, killQuietly, killTree } from '../shared/process-kill.js';
import { stopRunningExec, TeardownOnce } from '../shared/teardown.js';
import { segmentsOf } from '../shared/workspace-path.js';
import { commandArgv, launcherArgs, LAUNCH_CGROUP_FAILED, STATUS_FD, type BoxPlan, type Tools } from './argv.js';
import { cgroupNameFor, type CgroupDetection, type CgroupLimits, type EnvCgroup, type LimitName } from './cgroups.js';
import { inheritableFds, readIdentity, type ProcIdentity } from './host-proc.js';
import type { ResolvedBwrapOptions } from './options.js';
import { StatusReader } from './status.js';
import { boxSeccompFilter } from './seccomp.js';
import { createEnvRoot, ensurePrivateDir, getFile, ownerRecord, putFile, removeEnvRoot, type EnvRoot, type Ownership, type SizedFs } from './workspace.js';

/** Every box process carries these (not secrets): the harness can find strays by them. */
export const ENV_MARKER = 'SANDCHECK_ENV';
const MIB = 1024 * 1024;
/** After the launcher exited, how long a straggler may hold the output pipes before we let go of them. */
const STDIO_GRACE_MS = 500;
/** How long destroy waits for an exec it stopped to wind down. */
const STOP_WAIT_MS = 10_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

export const DEFAULT_STATE_DIR = '/run/sandcheck/bwrap';

const WORKSPACE_WORDS = { 'disk-image': 'sized ext4 image', tmpfs: 'sized tmpfs', 'host-dir': 'host-directory' } as const;

/** Everything the factory found out about this host, fixed for the backend's life. */
export interface BwrapRuntime {
  opts: ResolvedBwrapOptions;
  tools: Tools;
  cgroups: CgroupDetection;
  isRoot: boolean;
  /** Host uid the box runs as after setpriv; undefined = the harness's own uid. */
  dropToUid: number | undefined;
  workspace: 'disk-image' | 'tmpfs' | 'host-dir';
  stateDir: string;
}

export function resolveRuntime(opts: ResolvedBwrapOptions, tools: Tools, cgroups: CgroupDetection): BwrapRuntime {
  const uid = process.getuid?.() ?? -1;
  const isRoot = uid === 0;
  return {
    opts,
    tools,
    cgroups,
    isRoot,
    dropToUid: opts.unprivilegedUid === null ? undefined : opts.unprivilegedUid,
    // A disk image needs mkfs.ext4 and loop devices (often absent inside containers); else the sized tmpfs.
    workspace: opts.workspace ?? (isRoot ? (tools.mkfs && existsSync('/dev/loop-control') ? 'disk-image' : 'tmpfs') : 'host-dir'),
    stateDir: opts.stateDir ?? (isRoot ? DEFAULT_STATE_DIR : join(tmpdir(), `sandcheck-bwrap-${uid}`)),
  };
}

interface Running {
  launcherPid: number | undefined;
  status: StatusReader;
  stop(why: StopReason): Promise<void>;
  done: Promise<unknown>;
}

type StopReason = 'timeout' | 'output' | 'abort' | 'destroy' | 'privilege';

/** Claimed by every variant: options that weaken these keep claiming them, so a probe has to catch it. */
const ALWAYS: readonly PolicyItem[] = [
  'files.hostPaths',
  'files.readOnlyInput',
  'identity.unprivileged',
  'identity.hostCredentials',
  'lifecycle.freshEnvironment',
  // The harness's exporter applies the policy's export limits after getFiles; getFiles reads at most the
  // per-file cap of each regular file and never follows a link.
  'exports.limits',
  'posture.namespaces',
  'posture.hostMounts',
  'posture.capabilityBounding',
  'posture.devices',
];

/** The seccomp filter file inside an environment's root (written at create, gone with the root). */
const SECCOMP_FILE = 'seccomp.bpf';

const LIMIT_ITEM: Record<LimitName, PolicyItem> = {
  memory: 'resources.memoryMb',
  pids: 'resources.processes',
  cpu: 'resources.cpus',
};

export class BwrapBackend implements Backend {
  readonly name = 'bwrap';
  readonly description: string;

  constructor(readonly runtime: BwrapRuntime) {
    const o = runtime.opts;
    const weakened = [
      o.envFix === 'none' ? 'envFix none' : '',
      o.shareNetwork ? 'shared network' : '',
      o.extraBinds.length > 0 ? `${o.extraBinds.length} extra bind(s)` : '',
      o.unprivilegedUid === null ? 'no uid drop' : '',
      o.unshareUser ? '' : 'host user namespace',
      o.unsharePid ? '' : 'host pid namespace',
      o.seccomp ? '' : 'no seccomp filter',
      o.wallClock ? '' : 'no wall clock',
      o.outputCap ? '' : 'no output cap',
      o.teardown === 'thorough' ? '' : 'launcher-tree teardown',
      o.downloadApi === 'lstat' ? '' : 'naive download API',
      o.readOnlyInputs === 'enforced' ? '' : 'read-only inputs ignored',
      o.misdeclare ? 'MISDECLARED: claims every policy item (positive controls only)' : '',
    ].filter(Boolean);
    this.description = `bubblewrap: namespaces, read-only /usr, ${WORKSPACE_WORDS[runtime.workspace]} workspace, setpriv to a dedicated uid, ${
      runtime.cgroups.hierarchy ? runtime.cgroups.hierarchy.describe() : 'no cgroup'
    } limits${
      weakened.length > 0 ? ` (deliberately weakened: ${weakened.join(', ')})` : ''
    }`;
  }

  capabilities(policy: Policy): Capabilities {
    const rt = this.runtime;
    const o = rt.opts;
    const enforces: PolicyItem[] = [...ALWAYS];
    const reasons: Partial<Record<PolicyItem, string>> = {};
    // An item is claimed when nothing turned it off — or always, by a deliberately misdeclaring variant.
    const claimUnless = (item: PolicyItem, why: string | undefined): void => {
      if (why === undefined || o.misdeclare) enforces.push(item);
      else reasons[item] = why;
    };
    // What bwrap has no code for at all is never claimed, not even by misdeclare.
    if (policy.network.mode === 'off' || policy.network.allow.length === 0) enforces.push('network.egress');
    else reasons['network.egress'] = 'bwrap can only cut the network off entirely (--unshare-net); an allowlist needs a filtering proxy';
    reasons['output.sanitized'] = 'bwrap passes the box output through unchanged; escaping control bytes is left to whoever displays it';
    reasons['isolation.separateKernel'] = 'bubblewrap boxes run on the host kernel';
    // Claimed even when the option turns the filter off (a weakened variant the probe must catch); never without a filter for this architecture.
    const seccomp = boxSeccompFilter();
    if ('filter' in seccomp) enforces.push('posture.seccomp');
    else reasons['posture.seccomp'] = seccomp.reason;
    const cg = rt.cgroups;
    for (const limit of ['memory', 'pids', 'cpu'] as const) {
      claimUnless(
        LIMIT_ITEM[limit],
        cg.hierarchy === undefined
          ? `cannot create cgroups: ${cg.reason}`
          : !o.limits[limit]
            ? `the ${limit} cgroup limit is turned off in the backend options (limits.${limit}: false)`
            : cg.hierarchy.unavailable[limit],
      );
    }
    claimUnless('resources.wallSeconds', o.wallClock ? undefined : "the backend's own wall clock is turned off in the backend options (wallClock: false)");
    claimUnless('output.maxBytes', o.outputCap ? undefined : "the backend's own output cap is turned off in the backend options (outputCap: false)");
    claimUnless(
      'lifecycle.destroyAfter',
      o.teardown === 'thorough' ? undefined : "teardown kills only the launcher's process tree (teardown: launcher-tree, no cgroup): a daemon that left it survives",
    );
    claimUnless(
      'resources.diskMb',
      rt.workspace !== 'host-dir' ? undefined : 'the workspace (/work) is a plain host directory without a size limit (workspace: host-dir); only /tmp is a sized tmpfs',
    );
    return { isolation: 'sandbox', enforces, notEnforcedReasons: reasons };
  }

  async preflight(): Promise<void> {
    const rt = this.runtime;
    const hint = 'apt-get install -y bubblewrap util-linux';
    if (process.platform !== 'linux') throw new SandcheckError('BACKEND_UNAVAILABLE', `bubblewrap needs Linux (this is ${process.platform})`);
    if (!rt.tools.bwrap) throw new SandcheckError('BACKEND_UNAVAILABLE', 'bwrap (bubblewrap) is not installed', { hint });
    if (rt.dropToUid !== undefined) {
      if (!rt.tools.setpriv) throw new SandcheckError('BACKEND_UNAVAILABLE', 'setpriv is not installed (needed to drop to the box uid)', { hint });
      if (!rt.isRoot) {
        throw new SandcheckError('BACKEND_UNAVAILABLE', `dropping to uid ${rt.dropToUid} needs root`, {
          hint: 'run sandcheck as root, or set unprivilegedUid: null to run the box as your own (unprivileged) uid',
        });
      }
      const passwd = (await readFile('/etc/passwd', 'utf8').catch(() => '')).split('\n');
      const owner = passwd.find((l) => l.split(':')[2] === String(rt.dropToUid));
      if (owner) {
        throw new SandcheckError('BACKEND_UNAVAILABLE', `uid ${rt.dropToUid} belongs to the account "${owner.split(':')[0]}": the box needs a uid of its own`, {
          hint: 'choose another unprivilegedUid in the bwrap backend options',
        });
      }
    }
    if (rt.workspace !== 'host-dir' && !rt.isRoot) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `a ${rt.workspace} workspace (the disk limit) needs root to mount`, { hint: 'run as root, or set workspace: "host-dir"' });
    }
    if (rt.workspace === 'disk-image' && !rt.tools.mkfs) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'a disk-image workspace needs mkfs.ext4', { hint: 'apt-get install -y e2fsprogs, or set workspace: "tmpfs"' });
    }
    if (rt.opts.cgroups.mode !== 'auto' && rt.opts.cgroups.mode !== 'off' && rt.cgroups.hierarchy === undefined) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `cgroups (${rt.opts.cgroups.mode}) requested but unusable: ${rt.cgroups.reason}`, {
        hint: 'run as root on a host with cgroups mounted, or set cgroups.mode to "auto"',
      });
    }
    // The only sure test of user namespaces: start a trivial box exactly as the real ones start.
    const cmd = trialCommand(rt);
    const [file, ...args] = cmd;
    const r = await execa(file ?? 'bwrap', args, { env: {}, extendEnv: false, reject: false, timeout: 10_000, stdin: 'ignore' });
    if (r.exitCode !== 0) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `bwrap cannot create its namespaces here: ${r.stderr.trim() || r.shortMessage}`, {
        hint: 'enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 on older Debian kernels; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+)',
      });
    }
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const rt = this.runtime;
    if (!SAFE_ID.test(ctx.runId)) throw new SandcheckError('HARNESS', `run id "${ctx.runId}" is not safe in cgroup and directory names`);
    if (rt.opts.shareNetwork && !ctx.lab) {
      throw new SandcheckError('CONFIG_INVALID', 'shareNetwork: true is only allowed inside a lab: without one the box would get the host network', {
        hint: 'run with a lab, or leave shareNetwork off',
      });
    }
    if (ctx.lab && !rt.tools.nsenter) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'nsenter is not installed (needed to start boxes inside the lab)', { hint: 'apt-get install -y util-linux' });
    }
    const envId = randomBytes(4).toString('hex');
    const key = `${ctx.runId}-${envId}`;
    const name = cgroupNameFor(key);
    const box: Ownership | undefined = rt.dropToUid === undefined ? undefined : { uid: rt.dropToUid, gid: rt.dropToUid };
    await ensurePrivateDir(rt.stateDir, 0o711, rt.isRoot ? 0 : process.getuid?.());
    const bytes = policy.resources.diskMb * MIB;
    const sized: SizedFs | undefined =
      rt.workspace === 'tmpfs'
        ? { kind: 'tmpfs', bytes }
        : rt.workspace === 'disk-image' && rt.tools.mkfs
          ? { kind: 'disk-image', bytes, image: join(ctx.scratchDir, `bwrap-disk-${key}.img`), mkfs: rt.tools.mkfs }
          : undefined;
    const root = await createEnvRoot(join(rt.stateDir, key), name, sized, box, await ownerRecord(ctx.runId, envId, sized !== undefined, sized?.kind === 'disk-image' ? sized.image : undefined));
    let cg: EnvCgroup | undefined;
    const hierarchy = rt.cgroups.hierarchy;
    if (hierarchy) {
      const want = (l: LimitName): boolean => rt.opts.limits[l] && hierarchy.unavailable[l] === undefined;
      const limits: CgroupLimits = {
        ...(want('memory') ? { memoryBytes: policy.resources.memoryMb * MIB } : {}),
        ...(want('pids') ? { pids: policy.resources.processes } : {}),
        ...(want('cpu') ? { cpuCores: policy.resources.cpus } : {}),
      };
      try {
        cg = await hierarchy.create(name, limits);
      } catch (err) {
        // Capabilities claimed these limits: never run the box without them (fail closed).
        await removeEnvRoot(root.root, root.mounted, name, root.image);
        throw new SandcheckError('HARNESS', `cannot create cgroups: ${errorMessage(err)}`, { cause: err });
      }
    }
    const seccomp = rt.opts.seccomp ? boxSeccompFilter() : undefined;
    if (seccomp && 'filter' in seccomp) await writeFile(join(root.root, SECCOMP_FILE), seccomp.filter, { mode: 0o600 });
    if (ctx.lab && rt.opts.shareNetwork) {
      // A copy the box uid can read, whatever the lab's own directory permissions.
      await writeFile(root.resolvConf, await readFile(ctx.lab.resolvConfPath), { mode: 0o644 });
    }
    return new BwrapEnvironment(key, name, rt, policy, ctx, root, cg);
  }
}

function trialCommand(rt: BwrapRuntime): string[] {
  const plan: BoxPlan = {
    tools: rt.tools,
    uid: rt.dropToUid,
    unsharePid: rt.opts.unsharePid,
    unshareUser: rt.opts.unshareUser,
    shareNetwork: false,
    netnsPath: undefined,
    resolvConf: undefined,
    workHost: '/usr/bin', // any readable directory: the trial only needs a bind source
    tmpHost: undefined,
    tmpSizeBytes: MIB,
    readOnlyFiles: [],
    extraBinds: [],
    cwd: '',
    env: [],
    argv: ['/usr/bin/true'],
    statusFd: undefined,
  };
  return commandArgv(plan);
}

interface OutputState {
  forwarded: number;
  truncated: boolean;
}

class BwrapEnvironment implements Environment {
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
   * are read up to the per-file cap (the caller's, and at most the policy's maxFileMb). The policy's file
   * count and total size are not applied here: the harness's exporter applies the export limits to what
   * this returns, so that one place decides what leaves the box.
   */
  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    this.assertUsable('getFiles');
    const maxFile = Math.max(0, Math.min(options.maxBytesPerFile, this.policy.exports.maxFileMb * MIB));
    const out: GotFile[] = [];
    for (const p of paths) {
      // downloadApi 'naive' (a deliberate weakening): reads through links, on the host.
      out.push(this.rt.opts.downloadApi === 'naive' ? await describeEntry(this.root.work, p, maxFile, { followLinks: true }) : await getFile(this.root.work, p, maxFile));
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

  private plan(req: ExecRequest): BoxPlan {
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
    const plan = this.plan(req);
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
        (o.exit.code === LAUNCH_CGROUP_FAILED ? 'cannot join the environment cgroup' : `bwrap ended (${o.exit.signal ?? `exit ${o.exit.code}`}) before the box existed`);
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
  try {
    return await readlink(`/proc/${pid}/ns/user`);
  } catch {
    return undefined;
  }
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
