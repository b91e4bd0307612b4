import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { isAbsolute, join, posix, resolve } from 'node:path';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { Tristate } from '../../model/observation.js';
import type { Policy } from '../../model/policy.js';
import { RUN_MARKER } from '../../model/backend-contract.js';
import type {
  Backend,
  BackendContext,
  Capabilities,
  Environment,
  ExecRequest,
  ExecResult,
  GotFile,
  Leftovers,
  PolicyItem,
  PutFile,
  ResourceReport,
} from '../../model/backend-contract.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import type { CgroupCounters } from '../../lab/cgroup-counters.js';
import { BIN_DIRS, findBinary } from '../../core/find-binary.js';
import { commOf, processTree, withDescendants } from '../shared/host-proc.js';
import { killMarkedProcesses, killTree } from '../shared/process-kill.js';
import { stopRunningExec, TeardownOnce } from '../shared/teardown.js';
import { segmentsOf } from '../shared/workspace-path.js';
import {
  createEnvRoot,
  ensurePrivateDir,
  getFile,
  ownerRecord,
  putFile,
  removeEnvRoot,
  type EnvRoot,
  type Ownership,
  type SizedFs,
} from '../bwrap/workspace.js';
import { HOST_PATH, type CommandBackendConfig } from './config.js';
import { CountingCgroup, type CountingDetection } from './counting-cgroup.js';
import { recordToolTemp, removeToolTemp } from './tool-temp.js';
import { launch, runHelper, type LaunchOutcome, type Running } from './launch.js';
import { expand, policyValues, type Values } from './template.js';
import { CGROUP_NAMES } from '../shared/cgroup-names.js';
import { markOwnCounters } from '../own-counters.js';

export const ENV_MARKER = 'SANDCHECK_ENV';
const MIB = 1024 * 1024;
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const STOP_WAIT_MS = 10_000;

export interface CommandTools {
  nsenter: string | undefined;
  mkfs: string | undefined;
}

export interface CommandRuntime {
  cfg: CommandBackendConfig;
  file: string;
  /** `{configDir}`: the directory of the configuration file (helper scripts beside it). */
  configDir: string;
  tools: CommandTools;
  counting: CountingDetection;
  stateDir: string;
}

/** The tool's answer to its version command: the first line it printed, or why there is none. */
export type ToolVersionAnswer = { ok: true; version: string } | { ok: false; why: string };

export class CommandBackend implements Backend {
  readonly name: string;
  private readonly baseDescription: string;
  private versionAnswer: Promise<ToolVersionAnswer> | undefined;
  private versionLine: string | undefined;

  constructor(protected readonly rt: CommandRuntime) {
    markOwnCounters(this);
    this.name = rt.cfg.name;
    this.baseDescription = `command backend (${rt.cfg.shape}) from ${rt.file}${rt.cfg.description ? `: ${rt.cfg.description}` : ''}`;
  }

  /** Reports read it after preflight: the tool's version, once asked, leads it. */
  get description(): string {
    return this.versionLine === undefined ? this.baseDescription : `${this.versionLine}; ${this.baseDescription}`;
  }

  /** The file's `version` command, run once (undefined without one). Never throws. */
  toolVersion(): Promise<ToolVersionAnswer> | undefined {
    const v = this.rt.cfg.version;
    if (!v) return undefined;
    this.versionAnswer ??= runHelper(v.argv, { PATH: BIN_DIRS.join(':'), LC_ALL: 'C' }, v.timeoutMs, [], this.rt.configDir).then((r): ToolVersionAnswer => {
      const line = `${r.stdout}\n${r.stderr}`
        .split('\n')
        .map((l) => l.replace(/[^\x20-\x7e]/g, '').trim())
        .find((l) => l !== '');
      if (r.code !== 0)
        return { ok: false, why: `\`${v.argv.join(' ')}\` ${r.code === null ? 'did not finish' : `exited ${r.code}`}${line ? `: ${line.slice(0, 200)}` : ''}` };
      if (line === undefined) return { ok: false, why: `\`${v.argv.join(' ')}\` printed nothing` };
      this.versionLine = line.slice(0, 200);
      return { ok: true, version: this.versionLine };
    });
    return this.versionAnswer;
  }

  /** Exactly what the file claims: the probes verify each claim, whatever the policy asks. */
  capabilities(_policy: Policy): Capabilities {
    const { cfg } = this.rt;
    const reasons: Partial<Record<PolicyItem, string>> = {};
    for (const item of POLICY_ITEMS) {
      if (!cfg.claims.includes(item)) reasons[item] = cfg.notClaimedReasons[item] ?? `${this.rt.file} does not claim ${item}`;
    }
    const notObservable: Partial<Record<PolicyItem, string>> = {};
    if ('reason' in this.rt.counting) {
      // The tool's resource claims cannot be checked from outside without a counting cgroup: not the box's fault.
      for (const item of ['resources.memoryMb', 'resources.processes', 'resources.cpus'] as const) {
        if (cfg.claims.includes(item)) notObservable[item] = `no counting cgroup for the command backend here: ${this.rt.counting.reason}`;
      }
    }
    return {
      isolation: 'sandbox',
      enforces: [...cfg.claims],
      notEnforcedReasons: reasons,
      ...(Object.keys(notObservable).length > 0 ? { notObservable } : {}),
      ...(cfg.results === 'none' && cfg.resultsReason ? { noWrittenResults: cfg.resultsReason } : {}),
    };
  }

  async preflight(): Promise<void> {
    const { cfg } = this.rt;
    if (cfg.workspace !== 'host-dir' && process.getuid?.() !== 0) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `${this.rt.file}: workspace "${cfg.workspace}" is mounted by sandcheck and needs root`, {
        hint: 'run as root, or use workspace: host-dir',
      });
    }
    if (cfg.workspace === 'disk-image' && !this.rt.tools.mkfs)
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'mkfs.ext4 is not installed (workspace: disk-image)', { hint: 'apt-get install -y e2fsprogs' });
    // The launcher must exist; it is never run here (a tool's --version may have side effects of its own).
    const [cmd] = cfg.exec.argv;
    if (cmd === undefined || cmd.startsWith('{')) return this.checkVersion();
    const dirs = (cfg.exec.env['PATH'] ?? BIN_DIRS.join(':')).split(':').filter((d) => isAbsolute(d));
    const found = cmd.includes('/')
      ? await access(resolve(this.rt.configDir, cmd), constants.X_OK).then(
          () => cmd,
          () => undefined,
        )
      : await findBinary(cmd, dirs);
    if (found === undefined) {
      throw new SandcheckError(
        'BACKEND_UNAVAILABLE',
        `${this.rt.file}: exec.argv[0] "${cmd}" is not an executable ${cmd.includes('/') ? 'file' : `in ${dirs.join(':')}`}`,
        { hint: 'install the tool, or give its absolute path' },
      );
    }
    await this.checkVersion();
  }

  /** The file's own version command (its author vouches that it is harmless): a tool that cannot answer it is broken here. */
  private async checkVersion(): Promise<void> {
    const version = await this.toolVersion();
    if (version && !version.ok)
      throw new SandcheckError('BACKEND_UNAVAILABLE', `${this.rt.file}: the tool does not answer its version command: ${version.why}`, {
        hint: 'install the tool (or fix version.argv)',
      });
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const { cfg, tools } = this.rt;
    if (!SAFE_ID.test(ctx.runId)) throw new SandcheckError('HARNESS', `run id "${ctx.runId}" is not safe in cgroup and directory names`);
    if (ctx.lab && !tools.nsenter)
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'nsenter is not installed (needed to run the tool inside the lab)', {
        hint: 'apt-get install -y util-linux',
      });
    const envId = randomBytes(4).toString('hex');
    const key = `${ctx.runId}-${envId}`;
    // Not "sandcheck-…": the bwrap backend's crash sweep owns that prefix and would take these for its own strays.
    const name = `${CGROUP_NAMES.command}${key}`;
    const box: Ownership | undefined = cfg.boxUid === undefined ? undefined : { uid: cfg.boxUid, gid: cfg.boxUid };
    await ensurePrivateDir(this.rt.stateDir, 0o711, process.getuid?.() === 0 ? 0 : process.getuid?.());
    const bytes = policy.resources.diskMb * MIB;
    const sized: SizedFs | undefined =
      cfg.workspace === 'tmpfs'
        ? { kind: 'tmpfs', bytes }
        : cfg.workspace === 'disk-image' && tools.mkfs
          ? { kind: 'disk-image', bytes, image: join(ctx.scratchDir, `command-disk-${key}.img`), mkfs: tools.mkfs }
          : undefined;
    const root = await createEnvRoot(
      join(this.rt.stateDir, key),
      name,
      sized,
      box,
      await ownerRecord(ctx.runId, envId, sized !== undefined, sized?.kind === 'disk-image' ? sized.image : undefined),
    );
    let cg: CountingCgroup | undefined;
    try {
      // Before the tool runs: a harness killed from here on leaves its directories to the crash sweep.
      if (cfg.toolTemp) recordToolTemp(root.root, cfg.toolTemp);
      if ('roots' in this.rt.counting) cg = await CountingCgroup.create(this.rt.counting.roots, name);
      const env = new CommandEnvironment(envId, this.rt, policy, ctx, root, cg);
      await env.open();
      return env;
    } catch (err) {
      if (cg) await cg.remove();
      await removeEnvRoot(root.root, root.mounted, name, root.image);
      if (err instanceof SandcheckError) throw err;
      throw new SandcheckError('HARNESS', `cannot create the command environment: ${errorMessage(err)}`, { cause: err });
    }
  }
}

class CommandEnvironment implements Environment {
  private readonly readOnly = new Set<string>();
  private running: Running | undefined;
  private readonly teardownOnce = new TeardownOnce();
  private sessionRef: string | undefined;

  constructor(
    readonly id: string,
    private readonly rt: CommandRuntime,
    private readonly policy: Policy,
    private readonly ctx: BackendContext,
    private readonly root: EnvRoot,
    private readonly cg: CountingCgroup | undefined,
  ) {}

  get hostWorkspace(): string {
    return this.root.work;
  }

  private get cfg(): CommandBackendConfig {
    return this.rt.cfg;
  }

  /** The workspace as the box sees it: its host path for tools that show the host's tree. */
  private get boxWorkspace(): string {
    return this.cfg.boxWorkspace === HOST_PATH ? this.root.work : this.cfg.boxWorkspace;
  }

  private envValues(): Values {
    return {
      configDir: this.rt.configDir,
      workspace: this.root.work,
      ...(this.root.mounted ? { tmp: this.root.tmp } : {}),
      boxWorkspace: this.boxWorkspace,
      envId: this.id,
      runId: this.ctx.runId,
      ...(this.cfg.image !== undefined ? { image: this.cfg.image } : {}),
      ...(this.sessionRef !== undefined ? { sessionRef: this.sessionRef } : {}),
      ...policyValues(this.policy, this.policy.resources.wallSeconds * 1000, this.policy.output.maxBytes),
    };
  }

  /** A session tool's helper command (create / put / get / destroy), inside the lab like the box. */
  private async helper(key: 'create' | 'put' | 'get' | 'destroy'): Promise<string> {
    const s = this.cfg.session;
    const template = s?.[key];
    if (!s || !template) return '';
    const argv = this.inLab(expand(template, this.envValues()));
    const r = await runHelper(argv, this.cfg.exec.env, s.timeoutMs, this.cg?.procsFiles, this.rt.configDir);
    if (r.code !== 0)
      throw new SandcheckError(
        'HARNESS',
        `session.${key} failed (${r.code === null ? 'did not finish' : `exit ${r.code}`}): ${r.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`,
      );
    return r.stdout;
  }

  async open(): Promise<void> {
    if (this.cfg.shape !== 'session') return;
    const ref = (await this.helper('create')).split('\n')[0]?.trim() ?? '';
    if (ref === '') throw new SandcheckError('HARNESS', 'session.create printed no session reference on its first stdout line');
    this.sessionRef = ref;
  }

  private inLab(argv: string[]): string[] {
    const lab = this.ctx.lab;
    if (!lab) return argv;
    // nsenter, never `ip netns exec` (it remounts /sys and hides the cgroups).
    return [this.rt.tools.nsenter ?? 'nsenter', `--net=${lab.netnsPath}`, '--', ...argv];
  }

  private assertUsable(what: string): void {
    if (this.teardownOnce.begun) throw new SandcheckError('HARNESS', `${what} on a destroyed environment`);
    if (this.running) throw new SandcheckError('HARNESS', `${what} while an exec of this environment runs`);
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    this.assertUsable('putFiles');
    const box = this.cfg.boxUid === undefined ? undefined : { uid: this.cfg.boxUid, gid: this.cfg.boxUid };
    for (const f of files) {
      const rel = await putFile(this.root.work, f, box);
      if (f.readOnly) this.readOnly.add(rel);
      else this.readOnly.delete(rel);
    }
    await this.helper('put');
  }

  /** The download API: lstat only, links never followed (the same reader as the bwrap backend). */
  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    this.assertUsable('getFiles');
    await this.helper('get');
    const maxFile = Math.max(0, Math.min(options.maxBytesPerFile, this.policy.exports.maxFileMb * MIB));
    const out: GotFile[] = [];
    for (const p of paths) out.push(await getFile(this.root.work, p, maxFile));
    return out;
  }

  async hostPids(): Promise<number[]> {
    const r = this.running;
    if (!r || r.launcherPid === undefined) return [];
    const status = this.cfg.exec.status;
    const child = r.status?.childPid;
    if (status?.format === 'bwrap-json') {
      if (child === undefined) return [];
      const tree = await processTree(child);
      return status.childPid === 'runtime-init' ? tree.filter((p) => p !== child) : tree;
    }
    // runsc do moves its sandbox (the Sentry, its stubs and gofer) into a cgroup of its own: still descendants of the
    // cgroup's members. Walked from the members only: a launcher moved out on purpose (podman's tool cgroup) stays out.
    const members = this.cg ? withDescendants(await this.cg.pids()) : await processTree(r.launcherPid);
    return members.filter((p) => p !== r.launcherPid);
  }

  private command(req: ExecRequest): string[] {
    const env: [string, string][] = [];
    for (const [k, v] of Object.entries(req.env ?? {})) {
      if (!ENV_NAME.test(k)) throw new SandcheckError('HARNESS', `invalid environment variable name "${k}"`);
      env.push([k, v]);
    }
    env.push([RUN_MARKER, this.ctx.runId], [ENV_MARKER, this.id]);
    const base = { ...this.envValues(), ...policyValues(this.policy, req.timeoutMs, req.maxOutputBytes) };
    const cwd = req.cwd ? segmentsOf(req.cwd).join('/') : '';
    const status = this.cfg.exec.status;
    const values: Values = {
      ...base,
      boxCwd: cwd === '' ? this.boxWorkspace : posix.join(this.boxWorkspace, cwd),
      ...(status?.format === 'bwrap-json' ? { statusFd: String(status.fd) } : {}),
      ...(status?.format === 'json-file' ? { statusFile: join(this.root.root, 'status.json') } : {}),
      'argv...': req.argv,
      'env...': this.cfg.exec.envArg ? env.flatMap(([name, value]) => expand(this.cfg.exec.envArg ?? [], { ...base, name, value })) : [],
      'readOnly...': this.cfg.exec.readOnlyArg
        ? [...this.readOnly].flatMap((rel) =>
            expand(this.cfg.exec.readOnlyArg ?? [], { ...base, hostPath: join(this.root.work, rel), boxPath: posix.join(this.boxWorkspace, rel) }),
          )
        : [],
    };
    return this.inLab(expand(this.cfg.exec.argv, values));
  }

  /** Program variables go into the launcher's environment only when the template has no {env...}. */
  private launcherEnv(req: ExecRequest): Record<string, string> {
    if (this.cfg.exec.argv.includes('{env...}')) return { ...this.cfg.exec.env };
    return { ...this.cfg.exec.env, ...(req.env ?? {}), [RUN_MARKER]: this.ctx.runId, [ENV_MARKER]: this.id };
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    this.assertUsable('exec');
    if (req.argv.length === 0) throw new SandcheckError('HARNESS', 'exec needs a non-empty argv');
    const command = this.command(req);
    if (req.signal.aborted)
      return { exitCode: null, signal: null, startError: 'aborted before the tool started', timedOut: false, oomKilled: false, outputTruncated: false };
    let finished!: () => void;
    const running: Running = { launcherPid: undefined, status: undefined, stop: () => Promise.resolve(), done: new Promise<void>((r) => (finished = r)) };
    this.running = running;
    try {
      const baseline: CgroupCounters | undefined = this.cg ? await this.cg.beginExec() : undefined;
      const outcome = await launch({
        req,
        command,
        env: this.launcherEnv(req),
        statusSource: this.cfg.exec.status,
        statusFile: join(this.root.root, 'status.json'),
        stdin: this.cfg.exec.stdin,
        procsFiles: this.cg?.procsFiles ?? [],
        cwd: this.rt.configDir,
        running,
        killAll: () => this.killBox(running),
      });
      const resources = this.cg && baseline ? await this.cg.report(baseline).catch(() => undefined) : undefined;
      return this.result(outcome, resources);
    } finally {
      this.running = undefined;
      finished();
    }
  }

  private result(o: LaunchOutcome, resources: ResourceReport | undefined): ExecResult {
    // The tool's own claims (a status file's oomKilled) are recorded only where the cgroup cannot tell.
    const oomKilled: Tristate = resources?.oomKills !== undefined ? resources.oomKills > 0 : (o.claimedOom ?? 'unknown');
    const base = { timedOut: o.stoppedBy === 'timeout', oomKilled, outputTruncated: o.truncated, ...(resources ? { resources } : {}) };
    if (o.spawnError !== undefined) return { ...base, exitCode: null, signal: null, startError: `cannot start the tool: ${o.spawnError}` };
    if (o.statusExit !== undefined) return { ...base, exitCode: o.statusExit.code, signal: o.statusExit.signal };
    if (o.launchError !== undefined) return { ...base, exitCode: o.exit.code, signal: o.exit.signal, startError: o.launchError };
    if (o.statusExpected && o.stoppedBy === undefined) {
      // The tool has an out-of-band status and it never reported the program: a setup failure, not a program outcome.
      return {
        ...base,
        exitCode: o.exit.code,
        signal: o.exit.signal,
        startError: `the tool ended (${o.exit.signal ?? `exit ${o.exit.code}`}) without reporting the program on its status channel`,
      };
    }
    return { ...base, exitCode: o.exit.code, signal: o.exit.signal };
  }

  /** Everything of the box dies: the whole counting cgroup (the tool's child cgroups too), then anything carrying the marker. */
  private async killBox(running: Running): Promise<void> {
    if (this.cg) await this.cg.killAll();
    else if (running.launcherPid !== undefined) await killTree(running.launcherPid);
    await killMarkedProcesses(ENV_MARKER, this.id);
  }

  destroy(): Promise<Leftovers> {
    return this.teardownOnce.run(() => this.teardown());
  }

  private async teardown(): Promise<Leftovers> {
    const items: string[] = [];
    await stopRunningExec(this.running, STOP_WAIT_MS);
    if (this.sessionRef !== undefined) {
      try {
        await this.helper('destroy');
      } catch (err) {
        items.push(`session.destroy failed: ${errorMessage(err)}`);
      }
    }
    if (this.cg) {
      const alive = await this.cg.allPids();
      for (const pid of alive) items.push(`process ${pid} (${await commOf(pid)}) was still in the environment's cgroup at destroy; killed`);
      const left = alive.length > 0 ? await this.cg.killAll() : [];
      for (const pid of left) items.push(`process ${pid} (${await commOf(pid)}) survived SIGKILL in the environment's cgroup`);
    }
    for (const p of await killMarkedProcesses(ENV_MARKER, this.id))
      items.push(`process ${p.pid} (${p.comm}) of the environment was outside its cgroup at destroy; killed`);
    if (this.cfg.toolTemp) {
      // The tool is dead by now: what it would have removed on a clean exit is removed here.
      const { removed, kept } = await removeToolTemp(this.cfg.toolTemp, { [RUN_MARKER]: this.ctx.runId, [ENV_MARKER]: this.id });
      for (const name of removed) items.push(`the tool left its directory ${name} in ${this.cfg.toolTemp.dir}; removed`);
      for (const why of kept) items.push(`the tool left its directory ${why} in ${this.cfg.toolTemp.dir}; it could not be removed`);
    }
    if (this.cg) items.push(...(await this.cg.remove()));
    items.push(...(await removeEnvRoot(this.root.root, this.root.mounted, `sccmd-${this.ctx.runId}-${this.id}`, this.root.image)));
    return { items };
  }
}
