import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Backend, BackendContext, Environment, ExecRequest, ExecResult, GotFile, PutFile, ResourceReport } from '../../model/backend-contract.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { markOwnCounters } from '../../backends/own-counters.js';
import { processTree } from '../../backends/shared/host-proc.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { forkBomb } from '../../probes/fork-bomb/probe.js';
import { memoryBomb } from '../../probes/memory-bomb/probe.js';

const MiB = 2 ** 20;
const V1 = '/sys/fs/cgroup/memory';
const PIDS_V1 = '/sys/fs/cgroup/pids';
const usable =
  process.getuid?.() === 0 && existsSync(join(V1, 'memory.limit_in_bytes')) && existsSync(join(PIDS_V1, 'cgroup.procs')) && existsSync('/usr/bin/python3');
const POLICY: Policy = { ...CI_POLICY, name: 'adapter-counters', resources: { ...CI_POLICY.resources, memoryMb: 96, processes: 24, wallSeconds: 10 } };

/**
 * An adapter outside sandcheck (as an embedding hands one to runSuite): a plain host process per exec, either in
 * real memory and pids cgroups of its own ('cgroup') or under rlimits only ('rlimit'), and whatever counters it
 * chooses to report. Its cgroups are named after the run (swept by it) and removed on destroy.
 */
class Adapter implements Backend {
  readonly name = 'outside-adapter';
  readonly description = 'a test adapter outside sandcheck';
  constructor(
    readonly mode: 'cgroup' | 'rlimit' | 'stale-cgroup',
    readonly claim: (policy: Policy) => ResourceReport,
  ) {}
  capabilities() {
    return { isolation: 'sandbox' as const, enforces: POLICY_ITEMS };
  }
  async preflight(): Promise<void> {}
  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    return new AdapterEnv(this, policy, ctx);
  }
}

let seq = 0;
class AdapterEnv implements Environment {
  readonly id = `e${++seq}`;
  private readonly dir = mkdtempSync(join(tmpdir(), 'sc-adapter-counters-'));
  private readonly cgroups: string[];
  private pid: number | undefined;
  constructor(
    private readonly adapter: Adapter,
    private readonly policy: Policy,
    ctx: BackendContext,
  ) {
    const name = `sandcheck-${ctx.runId}-adapter${this.id}`;
    this.cgroups = adapter.mode === 'cgroup' ? [join(V1, name), join(PIDS_V1, name)] : adapter.mode === 'stale-cgroup' ? [join(V1, name)] : [];
    for (const cg of this.cgroups) mkdirSync(cg);
    const [mem, pids] = this.cgroups;
    if (adapter.mode === 'stale-cgroup' && mem) {
      // An earlier program was OOM-killed in these cgroups; the limit is then lifted, and the box runs under rlimits.
      writeFileSync(join(mem, 'memory.limit_in_bytes'), String(16 * MiB));
      spawnSync('/bin/sh', ['-c', `echo $$ > ${join(mem, 'cgroup.procs')}; exec /usr/bin/python3 -c "b = bytearray(64 << 20)"`]);
      writeFileSync(join(mem, 'memory.limit_in_bytes'), '-1');
    } else if (mem) writeFileSync(join(mem, 'memory.limit_in_bytes'), String(policy.resources.memoryMb * MiB));
    if (pids) writeFileSync(join(pids, 'pids.max'), String(policy.resources.processes));
  }
  async putFiles(files: readonly PutFile[]): Promise<void> {
    for (const f of files) {
      mkdirSync(dirname(join(this.dir, f.path)), { recursive: true });
      writeFileSync(join(this.dir, f.path), f.content);
    }
  }
  async getFiles(paths: readonly string[]): Promise<GotFile[]> {
    return paths.map((path) => ({ path, kind: 'missing' as const, size: 0 }));
  }
  async hostPids(): Promise<number[]> {
    return this.pid === undefined ? [] : processTree(this.pid);
  }
  exec(req: ExecRequest): Promise<ExecResult> {
    const limit = this.policy.resources.memoryMb * MiB;
    const joinCgroups = this.cgroups.map((cg) => `echo $$ > ${join(cg, 'cgroup.procs')}`).join('; ');
    // rlimit mode: the address space stops the allocation near the limit, and nothing counts it from outside.
    const rlimits = `ulimit -v ${Math.floor((limit * 1.05) / 1024)}`;
    const script =
      this.adapter.mode === 'cgroup'
        ? `${joinCgroups}; exec "$@"`
        : this.adapter.mode === 'stale-cgroup'
          ? `${joinCgroups}; ${rlimits}; exec "$@"`
          : `${rlimits}; exec "$@"`;
    const child = spawn('/bin/sh', ['-c', script, 'sh', '/usr/bin/python3', ...req.argv.slice(1)], {
      cwd: this.dir,
      env: { PATH: '/usr/bin:/bin', HOME: this.dir, ...req.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.pid = child.pid;
    child.stdout.on('data', (c: Buffer) => req.stdout.write(c));
    child.stderr.on('data', (c: Buffer) => req.stderr.write(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), req.timeoutMs);
    req.signal.addEventListener('abort', () => child.kill('SIGKILL'), { once: true });
    return new Promise((resolve) => {
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ exitCode: code, signal, timedOut: false, oomKilled: 'unknown', outputTruncated: false, resources: this.adapter.claim(this.policy) });
      });
    });
  }
  async destroy(): Promise<{ items: string[] }> {
    for (const pid of this.pid === undefined ? [] : await processTree(this.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await new Promise((r) => setTimeout(r, 100));
    for (const cg of this.cgroups) if (existsSync(cg)) rmdirSync(cg);
    rmSync(this.dir, { recursive: true, force: true });
    return { items: [] };
  }
}

/** Every limit acted, at the limit: what a box claims when it wants held. */
const claimsEverything = (p: Policy): ResourceReport => ({
  source: 'cgroup (the adapter says)',
  memoryLimitBytes: p.resources.memoryMb * MiB,
  memoryPeakBytes: p.resources.memoryMb * MiB,
  memoryFailcnt: 7,
  oomKills: 1,
  pidsLimit: p.resources.processes,
  pidsPeak: p.resources.processes,
  pidsMaxEvents: 40,
});
/** No limit ever acted: an adapter that under-reports. */
const claimsNothing = (): ResourceReport => ({ source: 'cgroup (the adapter says)', memoryFailcnt: 0, oomKills: 0, pidsMaxEvents: 0 });

async function run(backend: Backend) {
  const run = await openRunContext(`radctr${process.pid.toString(16).slice(-4)}`);
  try {
    const { security } = await new Runner({ backend, policy: POLICY, probes: [memoryBomb, forkBomb], run, concurrency: 1 }).run();
    return Object.fromEntries(security.map((r) => [r.id, r]));
  } finally {
    await run.dispose();
  }
}

describe.skipIf(!usable)("an outside adapter's counters are its claim: the host reads the box's cgroups itself", () => {
  it("a box under rlimits only that claims every limit acted: inconclusive (held when the same claims count as a built-in backend's)", async () => {
    const lying = await run(new Adapter('rlimit', claimsEverything));
    const mem = lying['memory-bomb'];
    expect(`${mem?.verdict}: ${mem?.reason}`).toMatch(/^inconclusive: no OOM kill or refused allocation was counted from outside/);
    expect(mem?.observation?.adapterResources?.oomKills).toBe(1);
    // The box runs in the harness's own cgroup: the host reads nothing it could call the box's.
    expect(mem?.observation?.resources).toBeUndefined();
    expect(mem?.evidence.find((e) => e.witness === 'adapter-counters')).toMatchObject({
      source: 'inside',
      detail: expect.stringMatching(/oomKills 1.*its claim, never evidence; the host could not read/),
    });
    // No process limit at all (root ignores RLIMIT_NPROC): 40 claimed refusals do not hide the crossing the host saw.
    expect(`${lying['fork-bomb']?.verdict}: ${lying['fork-bomb']?.reason}`).toMatch(/^crossed: \d+ processes ran at once, past the limit of 24/);
    // The rule is what decides: the very same box, its counters taken as sandcheck's own, earns held.
    const trusted = await run(markOwnCounters(new Adapter('rlimit', claimsEverything)));
    expect(`${trusted['memory-bomb']?.verdict}: ${trusted['memory-bomb']?.reason}`).toMatch(/^held: /);
  }, 120_000);

  it('a box in cgroups that counted an earlier OOM kill, its limit lifted, under rlimits and claiming every limit acted: inconclusive (only what happened after the host first looked counts)', async () => {
    const stale = await run(new Adapter('stale-cgroup', claimsEverything));
    const mem = stale['memory-bomb'];
    expect(`${mem?.verdict}: ${mem?.reason}`).toMatch(/^inconclusive: no OOM kill or refused allocation was counted from outside/);
    expect(mem?.observation?.resources).toMatchObject({
      source: expect.stringMatching(/^host: the cgroups of the box's program \(pid \d+: memory:\/sandcheck-radctr/),
      oomKills: 0,
    });
  }, 120_000);

  it("a box in real memory and pids cgroups that claims nothing: held on the host's own read of them", async () => {
    const honest = await run(new Adapter('cgroup', claimsNothing));
    for (const id of ['memory-bomb', 'fork-bomb']) {
      const r = honest[id];
      expect(`${id}: ${r?.verdict}: ${r?.reason}`).toMatch(new RegExp(`^${id}: held: `));
      expect(r?.observation?.resources?.source).toMatch(
        /^host: the cgroups of the box's program \(pid \d+: .*sandcheck-radctr.*-adapter.*\), read by sandcheck$/,
      );
      expect(r?.evidence.some((e) => e.source === 'outside' && e.witness === 'cgroup' && /read by sandcheck/.test(e.where ?? ''))).toBe(true);
    }
    expect(honest['memory-bomb']?.observation?.resources?.oomKills ?? 0).toBeGreaterThan(0);
    expect(honest['fork-bomb']?.observation?.resources?.pidsMaxEvents ?? 0).toBeGreaterThan(0);
    // Nothing of the adapter's is left.
    expect([V1, PIDS_V1].flatMap((root) => readdirSync(root).filter((n) => n.startsWith('sandcheck-radctr')))).toEqual([]);
  }, 120_000);
});
