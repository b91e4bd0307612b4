import { mkdir, mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import { describeEntry } from '../file-entry.js';
import { dirname, join, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { allowRules, parseAllowEntry, type AllowRule } from '../../model/network-allow.js';
import { PROOF_SUFFIX } from '../../lab/lab-session.js';
import { LAB_FRONT_RELAY_SOURCE } from '../../lab/netns/addresses.js';
import type { Policy } from '../../model/policy.js';
import { SandcheckError } from '../../core/errors.js';
import { findProcessesWithEnvMarker, killPids } from '../../lab/process-scan.js';
import { killGroup } from '../shared/process-kill.js';
import { CpuMeter } from './cpu-meter.js';
import type { Backend, BackendContext, Capabilities, Environment, ExecRequest, ExecResult, GotFile, Leftovers, PutFile } from '../../model/backend-contract.js';
import { markOwnCounters } from '../own-counters.js';

export const ENV_MARKER = 'SANDCHECK_ENV';
const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';
const STDIO_GRACE_MS = 500;

function insideWorkspace(root: string, rel: string): string {
  const abs = resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + sep)) {
    throw new SandcheckError('HARNESS', `path "${rel}" leaves the workspace`);
  }
  return abs;
}

/**
 * Test modes of the control for the network probes: `lab` (default) runs inside the run's lab;
 * `isolated` runs in a fresh empty network namespace; `policy-filter` runs in the lab behind
 * iptables rules built from the policy's allowlist. Only `lab` is the unsandboxed control.
 */
export type ProcessNetworkMode = 'lab' | 'isolated' | 'policy-filter';

export interface ProcessBackendOptions {
  network?: ProcessNetworkMode;
  /**
   * `policy-filter` only: allow entries (policy syntax) the filter lets through besides the policy's own, while the
   * probes are still judged by the policy: a filter with exactly these holes (e.g. `127.0.0.0/8`, `64:ff9b::/96`).
   */
  filterHoles?: readonly string[];
}

const filteredLabs = new Set<string>();

/** A DNS name suffix as it appears on the wire (length-prefixed labels, root label), in iptables' |hex| form. */
function dnsSuffixHex(suffix: string): string {
  return `${suffix
    .split('.')
    .filter(Boolean)
    .map((l) => `|${l.length.toString(16).padStart(2, '0')}|${l}`)
    .join('')}|00|`;
}

function ruleArgs(rule: AllowRule): { family: 4 | 6; args: string[] } {
  const proto = rule.proto === 'icmp' ? (rule.family === 4 ? 'icmp' : 'ipv6-icmp') : rule.proto;
  return {
    family: rule.family,
    args: [
      '-d',
      `${rule.address}/${rule.prefix}`,
      ...(proto === 'all' ? [] : ['-p', proto]),
      ...(rule.port !== undefined ? ['--dport', String(rule.port)] : []),
    ],
  };
}

/** OUTPUT rules in the lab namespace: replies and allowed destinations pass, everything else is refused. */
async function applyPolicyFilter(netnsPath: string, policy: Policy, holes: readonly AllowRule[]): Promise<void> {
  if (filteredLabs.has(netnsPath)) return;
  const run = (tool: string, args: string[]) => execa('nsenter', [`--net=${netnsPath}`, '--', tool, '-w', ...args]);
  for (const tool of ['iptables', 'ip6tables']) {
    await run(tool, ['-A', 'OUTPUT', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT']);
    // The lab witness's own proof-of-life query (a DNS name under PROOF_SUFFIX) shares this namespace: let it pass.
    await run(tool, ['-A', 'OUTPUT', '-p', 'udp', '--dport', '53', '-m', 'string', '--algo', 'bm', '--hex-string', dnsSuffixHex(PROOF_SUFFIX), '-j', 'ACCEPT']);
  }
  // The lab's fronting proxy relays from its own source address: its onward traffic is not the box's (a CDN is beyond a box's egress filter).
  await run('iptables', ['-A', 'OUTPUT', '-s', `${LAB_FRONT_RELAY_SOURCE}/32`, '-p', 'tcp', '-j', 'ACCEPT']);
  for (const rule of [...allowRules(policy), ...holes]) {
    const { family, args } = ruleArgs(rule);
    await run(family === 4 ? 'iptables' : 'ip6tables', ['-A', 'OUTPUT', ...args, '-j', 'ACCEPT']);
  }
  for (const tool of ['iptables', 'ip6tables']) await run(tool, ['-A', 'OUTPUT', '-j', 'REJECT']);
  filteredLabs.add(netnsPath);
}

class ProcessEnvironment implements Environment {
  readonly id: string;
  private destroyed = false;
  private readonly live = new Set<number>();
  private readonly cpu: CpuMeter;

  constructor(
    readonly root: string,
    private readonly ctx: BackendContext,
    private readonly network: ProcessNetworkMode,
    private readonly policy: Policy,
  ) {
    this.id = `${ctx.runId}-${randomBytes(3).toString('hex')}`;
    this.cpu = new CpuMeter(this.id);
  }

  get workspace(): string {
    return join(this.root, 'work');
  }

  get hostWorkspace(): string {
    return this.workspace;
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    for (const f of files) {
      const abs = insideWorkspace(this.workspace, f.path);
      await mkdir(dirname(abs), { recursive: true });
      await writeFile(abs, f.content);
      // Explicit chmod: the umask would otherwise trim the mode (and setuid bits must be exact).
      await chmod(abs, f.readOnly ? (f.mode ?? 0o444) & 0o7555 : (f.mode ?? 0o644));
    }
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    // Inside the run's lab when there is one: the control's traffic must meet the decoys, never a real network.
    await this.cpu.ensure();
    const inner = this.cpu.wrap(req.argv);
    const cpuBefore = await this.cpu.usageNs();
    const argv =
      this.network === 'isolated'
        ? ['unshare', '--net', '--', ...inner]
        : this.ctx.lab
          ? ['nsenter', `--net=${this.ctx.lab.netnsPath}`, '--', ...inner]
          : inner;
    const [file, ...args] = argv;
    if (file === undefined) throw new SandcheckError('HARNESS', 'exec needs a non-empty argv');
    // The control: a clean base plus the controller's environment (decoy credentials included), nothing else.
    const env: Record<string, string> = {
      PATH: BASE_PATH,
      HOME: this.workspace,
      LANG: 'C.UTF-8',
      ...this.ctx.controllerEnv,
      ...req.env,
      [ENV_MARKER]: this.id,
    };
    const child = execa(file, args, {
      cwd: req.cwd ? insideWorkspace(this.workspace, req.cwd) : this.workspace,
      env,
      extendEnv: false,
      detached: true,
      buffer: false,
      reject: false,
      stdin: req.stdin ? 'pipe' : 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      encoding: 'buffer',
      cleanup: false,
    });
    const pid = child.pid;
    if (pid !== undefined) this.live.add(pid);
    child.stdout?.on('data', (c: Buffer) => req.stdout.write(c));
    child.stderr?.on('data', (c: Buffer) => req.stderr.write(c));
    if (req.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(req.stdin));
    }
    const onAbort = (): void => {
      if (pid !== undefined) killGroup(pid);
      // A grandchild that left the group may still hold the pipes; let go of them after a grace.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STDIO_GRACE_MS).unref();
    };
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
    const result = await child;
    req.signal.removeEventListener('abort', onAbort);
    if (pid !== undefined) {
      killGroup(pid);
      this.live.delete(pid);
    }
    const startFailed = result.failed && result.exitCode === undefined && result.signal === undefined;
    const cpuAfter = await this.cpu.usageNs();
    const source = this.cpu.source;
    return {
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      ...(startFailed ? { startError: result.originalMessage || result.shortMessage } : {}),
      timedOut: false,
      oomKilled: 'unknown',
      outputTruncated: false,
      ...(source !== undefined && cpuAfter !== undefined ? { resources: { source, cpuUsageNs: cpuAfter - (cpuBefore ?? 0) } } : {}),
    };
  }

  /**
   * The control's download API is naive on purpose: it follows symlinks and reads hardlinked files
   * (what a careless file API does), so the export probes can show a crossing here.
   */
  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    // Naive about links, not about memory: no more than the policy's export total is held.
    let left = Math.floor(this.policy.exports.maxTotalMb * 1024 * 1024);
    const out: GotFile[] = [];
    for (const path of paths) {
      const got = await describeEntry(this.workspace, path, Math.min(options.maxBytesPerFile, left), { followLinks: true });
      if (got.content) left -= got.content.length;
      out.push(got);
    }
    return out;
  }

  async hostPids(): Promise<number[]> {
    return (await findProcessesWithEnvMarker(ENV_MARKER, this.id)).map((p) => p.pid);
  }

  async destroy(): Promise<Leftovers> {
    if (this.destroyed) return { items: [] };
    this.destroyed = true;
    for (const pid of this.live) killGroup(pid);
    const strays = await findProcessesWithEnvMarker(ENV_MARKER, this.id);
    killPids(strays.map((p) => p.pid));
    await this.cpu.remove();
    await rm(this.root, { recursive: true, force: true });
    return { items: strays.map((p) => `process ${p.pid} (${p.command}) outlived its group; killed`) };
  }
}

export class ProcessBackend implements Backend {
  readonly name: string;
  readonly description: string;
  private readonly network: ProcessNetworkMode;
  private readonly holes: readonly AllowRule[];

  constructor(options: ProcessBackendOptions = {}) {
    markOwnCounters(this);
    this.network = options.network ?? 'lab';
    const holes = options.filterHoles ?? [];
    if (holes.length > 0 && this.network !== 'policy-filter')
      throw new SandcheckError('CONFIG_INVALID', 'filterHoles apply only to the policy-filter test mode');
    this.holes = holes.map((entry) => {
      const parsed = parseAllowEntry(entry);
      if (!parsed.ok) throw new SandcheckError('CONFIG_INVALID', `filter hole "${entry}": ${parsed.error}`);
      return parsed.rule;
    });
    this.name = this.network === 'lab' ? 'process' : `process-${this.network}`;
    this.description =
      this.network === 'lab'
        ? 'unsandboxed control: a plain host process in a temp workspace (no isolation at all)'
        : `test mode of the control: a plain host process with its network ${this.network === 'isolated' ? 'in a fresh empty namespace' : `filtered by the policy allowlist${holes.length > 0 ? ` with holes for ${holes.join(', ')}` : ''}`}`;
  }

  capabilities(_policy: Policy): Capabilities {
    return { isolation: 'none', enforces: this.network === 'lab' ? [] : ['network.egress'], lightBoxes: true };
  }

  async preflight(): Promise<void> {
    if (process.platform !== 'linux' && process.platform !== 'darwin') {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the process backend needs a POSIX host (got ${process.platform})`);
    }
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    if (this.network === 'policy-filter') {
      if (!ctx.lab) throw new SandcheckError('BACKEND_UNAVAILABLE', "the policy-filter test mode needs the run's lab");
      await applyPolicyFilter(ctx.lab.netnsPath, policy, this.holes);
    }
    const root = await mkdtemp(join(ctx.scratchDir, 'env-'));
    const env = new ProcessEnvironment(root, ctx, this.network, policy);
    await mkdir(env.workspace, { recursive: true });
    return env;
  }
}
