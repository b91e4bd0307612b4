import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import createBwrapBackend, {
  BwrapOptionsSchema,
  commandArgv,
  type BoxPlan,
  DEFAULT_STATE_DIR,
  DEFAULT_UNPRIVILEGED_UID,
  sweepStaleCgroups,
  type BwrapOptions,
} from '../../backends/bwrap/index.js';
import { BwrapBackend, resolveRuntime } from '../../backends/bwrap/bwrap-backend.js';
import { findBinary } from '../../core/find-binary.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { detectCgroups } from '../../backends/bwrap/cgroups.js';
import type { Backend, BackendContext, Environment, ExecResult, LabHandle } from '../../model/backend-contract.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { ProbeSpec } from '../../model/probe.js';
import { openRunContext } from '../../harness/run-context.js';
import { harnessDeadlineMs, Runner } from '../../harness/runner.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { secretDecoyFile } from '../../probes/secret-decoy-file/probe.js';
import { stdoutFlood } from '../../probes/stdout-flood/probe.js';
import { wallClockSleep } from '../../probes/wall-clock-sleep/probe.js';
import { wallClockSpin } from '../../probes/wall-clock-spin/probe.js';

// ---------------------------------------------------------------- helpers

const newTestRunId = (tag: string): string => `rbw${tag}${randomBytes(3).toString('hex')}`;

interface Ran {
  result: ExecResult;
  stdout: string;
  stderr: string;
  wallMs: number;
}

interface RunOptions {
  timeoutMs?: number;
  maxOutputBytes?: number;
  signal?: AbortSignal;
  onStdout?: (text: string) => void;
  env?: Record<string, string>;
}

/** Runs `python3 -c code` in the environment, collecting output (never more than the cap). */
async function py(env: Environment, code: string, o: RunOptions = {}): Promise<Ran> {
  return run(env, ['python3', '-c', code], o);
}

async function run(env: Environment, argv: string[], o: RunOptions = {}): Promise<Ran> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const t0 = performance.now();
  const result = await env.exec({
    argv,
    timeoutMs: o.timeoutMs ?? 10_000,
    maxOutputBytes: o.maxOutputBytes ?? 1024 * 1024,
    ...(o.env ? { env: o.env } : {}),
    stdout: {
      write: (c) => {
        out.push(Buffer.from(c));
        o.onStdout?.(Buffer.from(c).toString('utf8'));
      },
    },
    stderr: { write: (c) => err.push(Buffer.from(c)) },
    signal: o.signal ?? new AbortController().signal,
  });
  return { result, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), wallMs: performance.now() - t0 };
}

/** A backend context without the whole run machinery: fresh scratch dir, one decoy credential. */
async function testContext(runId: string, lab?: LabHandle): Promise<BackendContext & { canary: string; dispose(): Promise<void> }> {
  const scratchDir = await mkdtemp(join(tmpdir(), `sandcheck-${runId}-`));
  const canary = `SCNRYTEST${randomBytes(8).toString('hex')}`;
  return {
    runId,
    scratchDir,
    controllerEnv: { AWS_SECRET_ACCESS_KEY: canary, SANDCHECK_RUN: runId },
    canary,
    ...(lab ? { lab } : {}),
    dispose: () => rm(scratchDir, { recursive: true, force: true }),
  };
}

/** create → fn → destroy, with the backend's leftovers returned for assertions. */
async function withEnv<T>(
  options: BwrapOptions,
  policy: Policy,
  tag: string,
  fn: (env: Environment, ctx: BackendContext & { canary: string }, backend: Backend) => Promise<T>,
): Promise<{ value: T; leftovers: string[]; runId: string }> {
  const backend = await createBwrapBackend(options);
  const runId = newTestRunId(tag);
  const ctx = await testContext(runId);
  const env = await backend.create(policy, ctx);
  try {
    const value = await fn(env, ctx, backend);
    const left = await env.destroy();
    return { value, leftovers: left.items, runId };
  } finally {
    await env.destroy();
    await ctx.dispose();
  }
}

async function runProbes(backend: Backend, policy: Policy, probes: readonly ProbeSpec[], runId: string) {
  const ctx = await openRunContext(runId);
  try {
    return { ...(await new Runner({ backend, policy, probes, run: ctx, concurrency: 3 }).run()), canaries: ctx.canaries };
  } finally {
    await ctx.dispose();
  }
}

/** Every cgroup directory (v1 controllers and cgroup2 trees) whose name starts with sandcheck-<runId>-. */
async function cgroupDirsOf(runId: string): Promise<string[]> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2] === 'cgroup' || f[2] === 'cgroup2')
    .map((f) => f[1] ?? '');
  const out: string[] = [];
  for (const m of new Set(mounts)) {
    for (const e of await readdir(m).catch(() => [] as string[])) if (e.startsWith(`sandcheck-${runId}-`)) out.push(join(m, e));
  }
  return out;
}

/** Mount points in this mount namespace whose source names the run (the workspace tmpfs). */
/** Mount points of the run's environments, whatever backs them (a tmpfs named after the run, or a loop device). */
async function mountsOf(runId: string): Promise<string[]> {
  return (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((mountPoint) => mountPoint.includes(`/${runId}-`));
}

/** Polls until `check` returns a value (not undefined) or the time is up. */
async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 5000, stepMs = 20): Promise<T | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

function statusField(status: string, name: string): string | undefined {
  return new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim();
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const MiB = 2 ** 20;
const U = DEFAULT_UNPRIVILEGED_UID;
const hex = (n: number): string => randomBytes(n).toString('hex');

// ---------------------------------------------------------------- payloads (bounded, stdlib only)

/** Allocates in 32 MiB steps up to 4× the given limit, printing progress; stops itself at the ceiling. */
const MEMORY_HOG = `
import sys
limit = int(sys.argv[1])
chunks, total, step = [], 0, 32 * 1024 * 1024
while total < 4 * limit:
    chunks.append(b"\\x01" * step)
    total += step
    print("allocated", total // 2**20, flush=True)
print("survived", total // 2**20)
`;

/** Forks up to 1024 children that wait on a pipe, stops at the third refusal, then reaps them all. */
const FORK_LOOP = `
import os, time
r, w = os.pipe()
kids, failed = [], 0
for i in range(1024):
    try:
        pid = os.fork()
    except OSError:
        failed += 1
        if failed >= 3:
            break
        time.sleep(0.01)
        continue
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
os.close(w)
for p in kids:
    os.waitpid(p, 0)
print("forked", len(kids), "refused", failed, flush=True)
`;

/** Starts a daemon (double fork, new session) whose argv carries the marker, then sleeps or exits. */
const DAEMON = `
import os, sys, time
marker, stay = sys.argv[1], sys.argv[2] == "stay"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", marker])
    os._exit(0)
os.wait()
print("spawned", flush=True)
if stay:
    time.sleep(60)
`;

const SLEEPER = `
import time
print("ready", flush=True)
time.sleep(60)
`;

const SPINNER = `
import time
end = time.monotonic() + 30
while time.monotonic() < end:
    pass
`;

// ---------------------------------------------------------------- tests

const SKIP = await bwrapSkipReason();
const live = it.skipIf(SKIP !== undefined);
const timings: string[] = [];

afterAll(() => {
  if (timings.length > 0) console.log(`bwrap backend timings (this machine):\n  ${timings.join('\n  ')}`);
});

describe(`bwrap backend: hardened profile, real bubblewrap${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  live('preflight passes, the hardened profile claims what it enforces, and the cold start is measured', async () => {
    const backend = await createBwrapBackend();
    await backend.preflight();
    const caps = backend.capabilities(CI_POLICY);
    expect(caps.isolation).toBe('sandbox');
    expect([...caps.enforces].sort()).toEqual(
      [
        'files.hostPaths',
        'files.readOnlyInput',
        'files.writeScope',
        'files.protected',
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
        'exports.limits',
        'posture.namespaces',
        'posture.hostMounts',
        'posture.capabilityBounding',
        'posture.devices',
        // x86_64: the seccomp deny list (backends/bwrap/seccomp.ts); elsewhere declared not enforced.
        ...(process.arch === 'x64' ? ['posture.seccomp'] : []),
      ].sort(),
    );
    expect(caps.notEnforcedReasons?.['output.sanitized']).toMatch(/unchanged/);
    expect(caps.notEnforcedReasons?.['isolation.separateKernel']).toMatch(/host kernel/);
    // An allowlist cannot be expressed with --unshare-net: declared, not faked.
    const allowlist: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['203.0.113.10:443'] } };
    expect(backend.capabilities(allowlist).notEnforcedReasons?.['network.egress']).toMatch(/allowlist/);

    const samples: { create: number; firstExec: number; python: number; destroy: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const ctx = await testContext(newTestRunId('cold'));
      const t0 = performance.now();
      const env = await backend.create(CI_POLICY, ctx);
      const t1 = performance.now();
      const first = await run(env, ['true']);
      const t2 = performance.now();
      const p = await py(env, 'print(1)');
      const t3 = performance.now();
      const left = await env.destroy();
      const t4 = performance.now();
      await ctx.dispose();
      expect(first.result).toMatchObject({ exitCode: 0, timedOut: false, oomKilled: false, outputTruncated: false });
      expect(p.stdout).toBe('1\n');
      expect(left.items).toEqual([]);
      samples.push({ create: t1 - t0, firstExec: t2 - t1, python: t3 - t2, destroy: t4 - t3 });
    }
    const m = (k: keyof (typeof samples)[number]): number => Math.round(median(samples.map((s) => s[k])));
    const cold = Math.round(median(samples.map((s) => s.create + s.firstExec)));
    timings.push(`cold start (create → first exec of /usr/bin/true done), median of 5: ${cold} ms (create ${m('create')} ms + exec ${m('firstExec')} ms)`);
    timings.push(`python3 -c 'print(1)' in a warm environment: ${m('python')} ms; destroy: ${m('destroy')} ms`);
    // Timings are reported, not asserted; only a start that outlasts the policy's queue/startup budget fails.
    expect(cold).toBeLessThan(CI_POLICY.attempts.queueStartupSeconds * 1000);
  });

  live('under ci: decoy file and env, spin, sleep and stdout flood are all held, stopped by the backend before the harness deadline', async () => {
    const backend = await createBwrapBackend();
    const probes = [secretDecoyFile, secretDecoyEnv, wallClockSpin, wallClockSleep, stdoutFlood];
    const { security } = await runProbes(backend, CI_POLICY, probes, newTestRunId('hard'));
    const failures = security.filter((r) => r.verdict !== 'held').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);
    expect(failures).toEqual([]);
    expect(security).toHaveLength(probes.length);
    const byId = new Map(security.map((r) => [r.id, r]));
    for (const id of ['wall-clock-spin', 'wall-clock-sleep']) {
      const o = byId.get(id)?.observation;
      expect(o?.killedBy, id).toBe('none');
      expect(o?.backendReport.timedOut, id).toBe(true);
      expect(o?.signal, id).toBe('SIGKILL');
      // Order, not duration: the backend's timer fired (timedOut) and the harness deadline never did (killedBy none);
      // the lower bound is the limit itself (not stopped before the policy wall).
      expect(o?.wallMs, id).toBeGreaterThanOrEqual(CI_POLICY.resources.wallSeconds * 1000 - 20);
      timings.push(
        `${id}: stopped by the backend's own timer after ${Math.round(o?.wallMs ?? 0)} ms (policy 5000, harness deadline ${harnessDeadlineMs(CI_POLICY)})`,
      );
    }
    const flood = byId.get('stdout-flood')?.observation;
    expect(flood?.killedBy).toBe('none');
    expect(flood?.backendReport.outputTruncated).toBe(true);
    expect((flood?.stdout.bytes ?? 0) + (flood?.stderr.bytes ?? 0)).toBe(CI_POLICY.output.maxBytes);
    // The env probe really attacked: it read /proc/self and /proc/1 environ (inside evidence), and no canary came out.
    const envProbe = byId.get('secret-decoy-env');
    expect(envProbe?.observation?.stdout.preview).toMatch(/"environReadable": [2-9]/);
    expect(envProbe?.evidence.find((e) => e.witness === 'canary-scan')?.source).toBe('outside');
    // The decoy directory does not exist in the box at all.
    expect(byId.get('secret-decoy-file')?.observation?.stdout.preview).toMatch(/"\.": "ENOENT"/);
  });

  live("envFix 'none' (bwrap launched with the controller env, only --clearenv) leaks through /proc/1/environ: secret-decoy-env crossed", async () => {
    const backend = await createBwrapBackend({ envFix: 'none' });
    // The weakened variant still claims the item, so the probe must catch it.
    expect(backend.capabilities(CI_POLICY).enforces).toContain('identity.hostCredentials');
    const { security } = await runProbes(backend, CI_POLICY, [secretDecoyEnv], newTestRunId('leak'));
    const r = security[0];
    expect(r?.verdict, r?.reason).toBe('crossed');
    expect(r?.evidence.some((e) => e.witness === 'canary-scan' && e.source === 'outside' && e.where === 'stdout')).toBe(true);
    expect(r?.observation?.stdout.preview).toMatch(/environ of 1: AWS_SECRET_ACCESS_KEY=SCNRY/);
    // Its own environment was clean (only the in-box positive control is there): bwrap's PID 1 carried the leak.
    expect(r?.observation?.stdout.preview).toMatch(/own env SANDCHECK_POSITIVE_CONTROL=SCNRYPOSCTL/);
    expect(r?.observation?.stdout.preview).not.toMatch(/own env (?!SANDCHECK_POSITIVE_CONTROL=)/);
  });

  live('extra binds without the uid drop: the decoy directory bound in is read (secret-decoy-file crossed)', async () => {
    const runId = newTestRunId('bind');
    const ctx = await openRunContext(runId);
    try {
      const backend = await createBwrapBackend({ extraBinds: [{ src: ctx.decoyDir, dest: ctx.decoyDir, readOnly: true }], unprivilegedUid: null });
      const { security } = await new Runner({ backend, policy: CI_POLICY, probes: [secretDecoyFile], run: ctx }).run();
      expect(security[0]?.verdict, security[0]?.reason).toBe('crossed');
    } finally {
      await ctx.dispose();
    }
  });

  live('a memory hog (up to 4× the limit) is OOM-killed; the peak comes from the cgroup, near the limit', async () => {
    const limit = CI_POLICY.resources.memoryMb * MiB;
    const { value: r, leftovers } = await withEnv({}, CI_POLICY, 'oom', (env) => run(env, ['python3', '-c', MEMORY_HOG, String(limit)], { timeoutMs: 30_000 }));
    expect(r.stdout).not.toMatch(/survived/);
    expect(r.result.oomKilled).toBe(true);
    expect(r.result.exitCode).toBe(137);
    expect(r.result.timedOut).toBe(false);
    expect(r.result.resources?.oomKills).toBeGreaterThanOrEqual(1);
    expect(r.result.resources?.memoryLimitBytes).toBe(limit);
    expect(r.result.resources?.memoryPeakBytes).toBeGreaterThan(limit * 0.9);
    expect(r.result.resources?.memoryPeakBytes).toBeLessThanOrEqual(limit * 1.01);
    expect(r.result.resources?.source).toMatch(/^cgroup v[12] .*sandcheck-rbwoom/);
    expect(leftovers).toEqual([]);
  });

  live('a fork loop hits pids.max (pids.events max > 0); with limits.pids=false it passes the limit and the item is declared not enforced', async () => {
    // 30 s: 1024 python forks take far longer than usual on a busy machine; the bound only catches a hang.
    const limited = await withEnv({}, CI_POLICY, 'fork', (env) => py(env, FORK_LOOP, { timeoutMs: 30_000 }));
    const res = limited.value.result.resources;
    expect(limited.value.stdout).toMatch(/forked \d+ refused 3/);
    expect(res?.pidsLimit).toBe(CI_POLICY.resources.processes);
    expect(res?.pidsMaxEvents).toBeGreaterThan(0);
    expect(res?.pidsPeak).toBeLessThanOrEqual(CI_POLICY.resources.processes);
    expect(Number(/forked (\d+)/.exec(limited.value.stdout)?.[1])).toBeLessThan(CI_POLICY.resources.processes);

    const open = await withEnv({ limits: { pids: false } }, CI_POLICY, 'fork', async (env, _ctx, backend) => {
      expect(backend.capabilities(CI_POLICY).enforces).not.toContain('resources.processes');
      expect(backend.capabilities(CI_POLICY).notEnforcedReasons?.['resources.processes']).toMatch(/limits\.pids: false/);
      return py(env, FORK_LOOP, { timeoutMs: 30_000 });
    });
    expect(open.value.stdout).toMatch(/forked 1024 refused 0/);
    expect(open.value.result.resources?.pidsLimit).toBeUndefined();
    expect(open.value.result.resources?.pidsMaxEvents).toBe(0);
    expect(open.value.result.resources?.pidsPeak).toBeGreaterThan(CI_POLICY.resources.processes);
    timings.push(`fork loop: ${res?.pidsPeak} pids at most with pids.max=64, ${open.value.result.resources?.pidsPeak} without`);
  });

  live('seen from the host, the payload runs as the unprivileged uid with no capabilities and no_new_privs; an abort stops it at once', async () => {
    const { value } = await withEnv({}, CI_POLICY, 'ident', async (env) => {
      expect(env.hostPids).toBeDefined();
      const abort = new AbortController();
      let ready = false;
      const exec = py(env, SLEEPER, { timeoutMs: 60_000, signal: abort.signal, onStdout: (t) => (ready ||= t.includes('ready')) });
      const pids = await eventually(async () => {
        const p = ready ? await env.hostPids?.() : [];
        return p && p.length > 0 ? p : undefined;
      });
      expect(pids?.length).toBeGreaterThan(0);
      const statuses = await Promise.all((pids ?? []).map((p) => readFile(`/proc/${p}/status`, 'utf8')));
      const ownPidNs = await readlink('/proc/self/ns/pid');
      const pidNs = await Promise.all((pids ?? []).map((p) => readlink(`/proc/${p}/ns/pid`)));
      const t0 = performance.now();
      abort.abort();
      const r = await exec;
      return { statuses, pidNs, ownPidNs, r, stopMs: performance.now() - t0 };
    });
    for (const s of value.statuses) {
      expect(statusField(s, 'Name')).toBe('python3');
      expect(statusField(s, 'Uid')?.split(/\s+/)).toEqual([String(U), String(U), String(U), String(U)]);
      expect(statusField(s, 'Gid')?.split(/\s+/)).toEqual([String(U), String(U), String(U), String(U)]);
      expect(statusField(s, 'Groups')).toBe('');
      expect(statusField(s, 'CapEff')).toBe('0000000000000000');
      expect(statusField(s, 'CapBnd')).toBe('0000000000000000');
      expect(statusField(s, 'NoNewPrivs')).toBe('1');
    }
    for (const ns of value.pidNs) expect(ns).not.toBe(value.ownPidNs);
    expect(value.r.result.signal).toBe('SIGKILL');
    // The abort stopped it, not its own 60 s timer; the bound only catches an abort that is ignored.
    expect(value.r.result.timedOut).toBe(false);
    expect(value.stopMs).toBeLessThan(30_000);
  });

  live('destroy during an exec kills the box and a daemon it started; no cgroup, mount, workspace or process of the environment remains', async () => {
    const marker = `4000.${Date.now() % 1_000_000}`;
    const backend = await createBwrapBackend();
    const runId = newTestRunId('life');
    const ctx = await testContext(runId);
    try {
      const env = await backend.create(CI_POLICY, ctx);
      expect(await cgroupDirsOf(runId)).not.toEqual([]);
      expect(await mountsOf(runId)).toHaveLength(1);
      let spawned = false;
      const exec = run(env, ['python3', '-c', DAEMON, marker, 'stay'], { timeoutMs: 60_000, onStdout: (t) => (spawned ||= t.includes('spawned')) });
      const daemon = await eventually(async () => {
        const found = spawned ? await findProcessesWithCmdline(`sleep ${marker}`) : [];
        return found.length > 0 ? found : undefined;
      });
      expect(daemon).toHaveLength(1);
      const t0 = performance.now();
      const [left, r] = await Promise.all([env.destroy(), exec]);
      timings.push(`destroy of a running environment (freeze, kill, thaw, rmdir, umount): ${Math.round(performance.now() - t0)} ms`);
      expect(r.result.signal).toBe('SIGKILL');
      expect(left.items).toEqual([]);
      expect(await findProcessesWithCmdline(`sleep ${marker}`)).toEqual([]);
      expect(await cgroupDirsOf(runId)).toEqual([]);
      expect(await mountsOf(runId)).toEqual([]);
      expect(existsSync(join(DEFAULT_STATE_DIR, env.id))).toBe(false);
      expect(await env.destroy()).toEqual({ items: [] }); // idempotent
    } finally {
      await ctx.dispose();
    }
  });

  live('without a pid namespace a daemon escapes bwrap, yet the cgroup ends it when the exec ends', async () => {
    const marker = `4001.${Date.now() % 1_000_000}`;
    const { value: r, leftovers } = await withEnv({ unsharePid: false }, CI_POLICY, 'nopid', async (env) => {
      const x = await run(env, ['python3', '-c', DAEMON, marker, 'leave'], { timeoutMs: 20_000 });
      return { ...x, after: await findProcessesWithCmdline(`sleep ${marker}`) };
    });
    expect(r.stdout).toContain('spawned');
    expect(r.result.exitCode).toBe(0);
    // The exec ended with the payload, not at its 20 s timer while the daemon (sleep 4001 s) held on.
    expect(r.result.timedOut).toBe(false);
    expect(r.after).toEqual([]);
    expect(leftovers).toEqual([]);
  });

  live(
    'files: inputs are read-only, the box sees only /usr, /proc, /dev, /tmp and /work, exports never follow links, no host descriptor leaks in',
    async () => {
      const { value } = await withEnv({}, CI_POLICY, 'files', async (env, ctx) => {
        await env.putFiles([
          { path: 'input.txt', content: Buffer.from('original\n'), readOnly: true },
          { path: 'data/notes.txt', content: Buffer.from('scratch\n') },
        ]);
        const code = `
import errno, json, os, socket
res = {}
def attempt(name, fn):
    try:
        fn()
        res[name] = "ok"
    except OSError as e:
        res[name] = errno.errorcode.get(e.errno, str(e.errno))
attempt("write-input", lambda: open("input.txt", "a").write("x"))
attempt("chmod-input", lambda: os.chmod("input.txt", 0o666))
attempt("unlink-input", lambda: os.unlink("input.txt"))
attempt("rename-input", lambda: os.rename("input.txt", "moved.txt"))
attempt("write-writable", lambda: open("data/notes.txt", "a").write("more"))
attempt("write-usr", lambda: open("/usr/sandcheck-probe", "w"))
attempt("write-tmp", lambda: open("/tmp/t", "w").write("t"))
attempt("write-out", lambda: open("out.txt", "w").write("result"))
attempt("symlink-file", lambda: os.symlink("/etc/passwd", "link"))
attempt("symlink-dir", lambda: os.symlink("/etc", "dir"))
fds = os.listdir("/proc/self/fd")
res["fds"] = {f: os.readlink("/proc/self/fd/" + f) for f in fds if os.path.exists("/proc/self/fd/" + f)}
res["interfaces"] = [n for _, n in socket.if_nameindex()]
res["root"] = sorted(os.listdir("/"))
res["env"] = sorted(os.environ)
res["cwd"] = os.getcwd()
res["proc1"] = open("/proc/1/environ", "rb").read().decode("utf-8", "replace")
print(json.dumps(res))
`;
        const r = await py(env, code, { env: { EXTRA: 'yes' } });
        const got = await env.getFiles(['input.txt', 'out.txt', 'data/notes.txt', 'link', 'dir/passwd', 'missing', '../escape'], { maxBytesPerFile: MiB });
        const putThroughLink = await env.putFiles([{ path: 'dir/planted', content: Buffer.from('x') }]).then(
          () => 'accepted',
          (err: unknown) => (err instanceof SandcheckError ? err.code : String(err)),
        );
        return { r, got, putThroughLink, canary: ctx.canary };
      });
      const res = JSON.parse(value.r.stdout) as Record<string, unknown>;
      // Root-owned 0444 stops writes; the read-only bind over it stops unlink and rename in the box-owned directory.
      expect([res['write-input'], res['chmod-input'], res['unlink-input'], res['rename-input']]).toEqual(['EACCES', 'EROFS', 'EBUSY', 'EBUSY']);
      expect(res['write-usr']).toBe('EROFS');
      for (const k of ['write-writable', 'write-tmp', 'write-out', 'symlink-file', 'symlink-dir']) expect(res[k], k).toBe('ok');
      expect(res['root']).toEqual(['bin', 'dev', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'work']);
      expect(res['interfaces']).toEqual(['lo']);
      expect(res['cwd']).toBe('/work');
      expect(res['env']).toEqual(['EXTRA', 'HOME', 'LANG', 'PATH', 'PWD', 'SANDCHECK_ENV', 'SANDCHECK_RUN']);
      expect(String(res['proc1'])).not.toContain(value.canary);
      // Beyond stdin/stdout/stderr, nothing of the host: descriptors the harness inherited arrive as /dev/null.
      const fds = res['fds'] as Record<string, string>;
      for (const [fd, target] of Object.entries(fds)) if (Number(fd) > 2) expect(target, `fd ${fd}`).toBe('/dev/null');
      const byPath = new Map(value.got.map((g) => [g.path, g]));
      expect(Buffer.from(byPath.get('input.txt')?.content ?? []).toString()).toBe('original\n');
      expect(Buffer.from(byPath.get('out.txt')?.content ?? []).toString()).toBe('result');
      expect(Buffer.from(byPath.get('data/notes.txt')?.content ?? []).toString()).toBe('scratch\nmore');
      expect(byPath.get('link')).toMatchObject({ kind: 'symlink' });
      expect(byPath.get('link')?.content).toBeUndefined();
      expect(byPath.get('dir/passwd')).toMatchObject({ kind: 'symlink' });
      expect(byPath.get('dir/passwd')?.content).toBeUndefined();
      expect(byPath.get('missing')).toMatchObject({ kind: 'missing' });
      expect(byPath.get('../escape')?.content).toBeUndefined();
      expect(value.putThroughLink).toBe('HARNESS');
      expect(existsSync('/etc/planted')).toBe(false);
    },
  );

  live('getFiles holds no more than the policy total: a set past it is not read, its files come back with their sizes', async () => {
    // 1 MiB in total, at most 1 MiB a file: 3 × 300 KiB + 100 KiB fits and is read; one more 300 KiB file passes it.
    const policy: Policy = { ...CI_POLICY, exports: { maxFiles: 20, maxFileMb: 1, maxTotalMb: 1 } };
    const sizes = [300 * 1024, 300 * 1024, 300 * 1024, 100 * 1024, 300 * 1024];
    const { value } = await withEnv({}, policy, 'total', async (env) => {
      await env.putFiles(sizes.map((n, i) => ({ path: `out/f${i}.bin`, content: Buffer.alloc(n, 0x61 + i) })));
      const paths = sizes.map((_, i) => `out/f${i}.bin`);
      return {
        within: await env.getFiles(paths.slice(0, 4), { maxBytesPerFile: MiB }),
        past: await env.getFiles([...paths, 'missing'], { maxBytesPerFile: MiB }),
      };
    });
    expect(value.within.map((g) => g.content?.length)).toEqual(sizes.slice(0, 4));
    expect(Buffer.from(value.within[3]?.content ?? []).every((b) => b === 0x64)).toBe(true);
    expect(value.past.map((g) => g.content)).toEqual(sizes.map(() => undefined).concat([undefined]));
    for (const [i, n] of sizes.entries()) {
      expect(value.past[i]).toMatchObject({
        kind: 'file',
        size: n,
        note: "not read: the files asked for come to 1331200 bytes, past the policy's 1 MB in total",
      });
    }
    expect(value.past[5]).toMatchObject({ kind: 'missing' });
  });

  live('disk: /work and /tmp share one tmpfs of policy diskMb; writing past it gives ENOSPC', async () => {
    const policy: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, diskMb: 16 } };
    const code = `
import errno, os
written = 0
out = {}
for target, n in (("/tmp/a", 8), ("/work/b", 32)):
    try:
        with open(target, "wb") as fh:
            for _ in range(n):
                fh.write(b"\\0" * 1048576)
                fh.flush()
                written += 1
    except OSError as e:
        out[target] = errno.errorcode.get(e.errno)
st = os.statvfs("/work")
print(written, out.get("/work/b"), st.f_blocks * st.f_frsize // 1048576)
`;
    const { value: r } = await withEnv({ workspace: 'tmpfs' }, policy, 'disk', (env) => py(env, code));
    const [written, error, size] = r.stdout.trim().split(' ');
    expect(error).toBe('ENOSPC');
    expect(Number(size)).toBe(16);
    expect(Number(written)).toBeLessThanOrEqual(16);
    expect(Number(written)).toBeGreaterThanOrEqual(14);
  });

  live(
    'disk image: environments made at once each get their own sized ext4 (a copy of one template per run), each on its own loop device, all gone at destroy',
    async () => {
      const policy: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, diskMb: 16 } };
      const backend = await createBwrapBackend({ workspace: 'disk-image' });
      const runId = newTestRunId('dimg');
      const ctx = await testContext(runId);
      try {
        const envs = await Promise.all([0, 1, 2, 3].map(() => backend.create(policy, ctx)));
        try {
          const code = (i: number): string => `
import os
open("/work/mine", "w").write("${i}")
st = os.statvfs("/work")
print(sorted(os.listdir("/work")), open("/work/mine").read(), st.f_blocks * st.f_frsize // 1048576)
`;
          const outs = await Promise.all(envs.map((env, i) => py(env, code(i))));
          for (const [i, o] of outs.entries()) {
            expect(o.result.exitCode, o.stderr).toBe(0);
            expect(o.stdout.trim()).toMatch(new RegExp(`^\\['mine'\\] ${i} 1[56]$`));
          }
          const loops = (await readFile('/proc/self/mountinfo', 'utf8'))
            .split('\n')
            .filter((l) => l.includes(`/${runId}-`) && / - ext4 \/dev\/loop\d+ /.test(l));
          expect(new Set(loops.map((l) => / - ext4 (\S+)/.exec(l)?.[1])).size).toBe(4);
          expect((await readdir(ctx.scratchDir)).filter((n) => n.startsWith('bwrap-disk-template-'))).toHaveLength(1);
        } finally {
          for (const env of envs) expect((await env.destroy()).items).toEqual([]);
        }
        expect((await readFile('/proc/self/mountinfo', 'utf8')).includes(`/${runId}-`)).toBe(false);
        expect((await readdir(ctx.scratchDir)).filter((n) => n.startsWith('bwrap-disk-') && !n.startsWith('bwrap-disk-template-'))).toEqual([]);
      } finally {
        await ctx.dispose();
      }
    },
  );

  live('cpu: a spinner under cpus=0.5 gets half a core (cpuacct usage, throttled periods) and is stopped at the wall clock', async () => {
    const policy: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: 0.5, wallSeconds: 2 } };
    const { value: r } = await withEnv({}, policy, 'cpu', (env) => py(env, SPINNER, { timeoutMs: 2000 }));
    expect(r.result.timedOut).toBe(true); // the cause: the backend's own wall clock ended the spinner
    const res = r.result.resources;
    expect(res?.cpuQuotaCores).toBe(0.5);
    // The quota's bound holds whatever the machine's load (2 s × 0.5 cpu, with slack for the last period).
    expect(res?.cpuUsageNs).toBeGreaterThan(0);
    expect(res?.cpuUsageNs).toBeLessThan(1.4e9);
    // Where the spinner got near its share, the quota is seen acting; on a busy machine it may never reach it.
    if ((res?.cpuUsageNs ?? 0) > 0.8e9) expect(res?.cpuThrottledPeriods).toBeGreaterThan(0);
    timings.push(`cpu 0.5 for 2 s of wall: ${((res?.cpuUsageNs ?? 0) / 1e9).toFixed(2)} s of CPU, ${res?.cpuThrottledPeriods} throttled periods`);
  });
});

/** A cgroup2 directory this host can test the v2 driver in (the unified mount of a hybrid host, or the root). */
async function cgroup2Root(): Promise<string | undefined> {
  const line = (await readFile('/proc/self/mounts', 'utf8')).split('\n').find((l) => l.split(' ')[2] === 'cgroup2');
  return line?.split(' ')[1];
}

describe(`bwrap backend: variants, cgroup drivers, lab and crash recovery${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  live(
    'inside a lab the whole invocation runs under nsenter: a shared network is the lab netns (with its resolv.conf), an unshared one is neither the lab nor the host',
    async () => {
      const name = `sc-bwt-${hex(3)}`;
      const netnsPath = `/run/netns/${name}`;
      const runId = newTestRunId('lab');
      const scratch = await mkdtemp(join(tmpdir(), `sandcheck-${runId}-lab-`));
      await execa('ip', ['netns', 'add', name]);
      try {
        const resolvConfPath = join(scratch, 'resolv.conf');
        await writeFile(resolvConfPath, `# lab ${name}\nnameserver 10.255.255.53\n`, { mode: 0o600 });
        const lab: LabHandle = { netnsPath, resolvConfPath };
        const labNs = `net:[${(await stat(netnsPath)).ino}]`;
        const hostNs = await readlink('/proc/self/ns/net');
        const netOf = async (options: BwrapOptions): Promise<{ ns: string | undefined; stdout: string }> => {
          const backend = await createBwrapBackend(options);
          const ctx = await testContext(newTestRunId('lab'), lab);
          const env = await backend.create(CI_POLICY, ctx);
          try {
            let ready = false;
            const code =
              'import os,time\nprint(open("/etc/resolv.conf").read() if os.path.exists("/etc/resolv.conf") else "no resolv.conf", flush=True)\nprint("ready", flush=True)\ntime.sleep(60)';
            const abort = new AbortController();
            const exec = py(env, code, { timeoutMs: 30_000, signal: abort.signal, onStdout: (t) => (ready ||= t.includes('ready')) });
            const pid = await eventually(async () => (ready ? (await env.hostPids?.())?.[0] : undefined));
            const ns = pid === undefined ? undefined : await readlink(`/proc/${pid}/ns/net`);
            abort.abort();
            const r = await exec;
            return { ns, stdout: r.stdout };
          } finally {
            await env.destroy();
            await ctx.dispose();
          }
        };
        const shared = await netOf({ shareNetwork: true });
        expect(shared.ns).toBe(labNs);
        expect(shared.stdout).toContain(`# lab ${name}`);
        const sealed = await netOf({});
        expect(sealed.ns).toMatch(/^net:\[\d+\]$/);
        expect(sealed.ns).not.toBe(labNs);
        expect(sealed.ns).not.toBe(hostNs);
        expect(sealed.stdout).toContain('no resolv.conf');
      } finally {
        await execa('ip', ['netns', 'del', name], { reject: false });
        await rm(scratch, { recursive: true, force: true });
      }
    },
  );

  live('preflight fails closed: missing bwrap or setpriv, namespaces that cannot be created, a box uid that has an account', async () => {
    const opts = BwrapOptionsSchema.parse({});
    const noCgroups = await detectCgroups('off');
    const tools = { sh: '/bin/sh', bwrap: await findBinary('bwrap'), setpriv: await findBinary('setpriv'), nsenter: await findBinary('nsenter') };
    const variant = (t: Partial<typeof tools>): BwrapBackend => new BwrapBackend(resolveRuntime(opts, { ...tools, ...t }, noCgroups));
    await expect(variant({ bwrap: undefined }).preflight()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE', hint: expect.stringContaining('bubblewrap') });
    await expect(variant({ setpriv: undefined }).preflight()).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
      hint: expect.stringContaining('util-linux'),
    });
    // A bwrap that cannot start its trial box (here: one that always fails) stands for missing user namespaces.
    await expect(variant({ bwrap: '/bin/false' }).preflight()).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
      message: expect.stringMatching(/namespaces/),
    });
    const passwd = await readFile('/etc/passwd', 'utf8');
    const taken = /^[^:]+:[^:]*:(\d+):/m.exec(passwd.split('\n').find((l) => Number(l.split(':')[2]) > 0) ?? '')?.[1];
    if (taken !== undefined) {
      await expect((await createBwrapBackend({ unprivilegedUid: Number(taken) })).preflight()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    }
    await expect((await createBwrapBackend({ cgroups: { mode: 'v2', v2Parent: '/nonexistent' } })).preflight()).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
    });
  });

  live('shareNetwork without a lab is refused before anything starts (the box would get the host network)', async () => {
    const backend = await createBwrapBackend({ shareNetwork: true });
    const ctx = await testContext(newTestRunId('nolab'));
    try {
      await expect(backend.create(CI_POLICY, ctx)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    } finally {
      await ctx.dispose();
    }
  });

  live('cgroup v2 driver: limits it cannot apply are declared with the reason; cgroup.kill still stops the box and destroy removes the cgroup', async () => {
    const root = await cgroup2Root();
    if (root === undefined) {
      // No cgroup2 mount at all: the driver must say so, fail closed.
      const backend = await createBwrapBackend({ cgroups: { mode: 'v2' } });
      await expect(backend.preflight()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
      return;
    }
    const backend = await createBwrapBackend({ cgroups: { mode: 'v2', v2Parent: root } });
    const caps = backend.capabilities(CI_POLICY);
    for (const item of ['resources.memoryMb', 'resources.processes', 'resources.cpus'] as const) {
      if (!caps.enforces.includes(item)) expect(caps.notEnforcedReasons?.[item], item).toMatch(/cgroup2/);
    }
    const marker = `4002.${Date.now() % 1_000_000}`;
    const runId = newTestRunId('v2');
    const ctx = await testContext(runId);
    try {
      const env = await backend.create(CI_POLICY, ctx);
      expect(await cgroupDirsOf(runId)).toEqual([join(root, `sandcheck-${env.id}`)]);
      let spawned = false;
      const exec = run(env, ['python3', '-c', DAEMON, marker, 'stay'], { timeoutMs: 1500, onStdout: (t) => (spawned ||= t.includes('spawned')) });
      const pids = await eventually(async () => {
        const p = spawned ? await env.hostPids?.() : [];
        return p && p.length >= 2 ? p : undefined;
      });
      expect(pids?.length).toBeGreaterThanOrEqual(2); // the payload and its daemon, both in the cgroup
      const r = await exec;
      expect(r.result.timedOut).toBe(true); // the backend's timer ended payload and daemon (both gone below)
      expect(r.result.resources?.source).toMatch(/^cgroup v2/);
      expect(r.result.resources?.cpuUsageNs).toBeGreaterThan(0);
      expect(await findProcessesWithCmdline(`sleep ${marker}`)).toEqual([]);
      expect((await env.destroy()).items).toEqual([]);
      expect(await cgroupDirsOf(runId)).toEqual([]);
    } finally {
      await ctx.dispose();
    }
  });

  live('without cgroups: the limits are declared not enforced (fail closed), the wall clock still kills the whole tree and marked strays', async () => {
    const backend = await createBwrapBackend({ cgroups: { mode: 'off' }, unsharePid: false });
    const caps = backend.capabilities(CI_POLICY);
    for (const item of ['resources.memoryMb', 'resources.processes', 'resources.cpus'] as const) {
      expect(caps.enforces).not.toContain(item);
      expect(caps.notEnforcedReasons?.[item]).toMatch(/^cannot create cgroups: cgroups are turned off/);
    }
    expect(caps.enforces).toContain('resources.wallSeconds');
    const marker = `4003.${Date.now() % 1_000_000}`;
    const { value, leftovers, runId } = await withEnv({ cgroups: { mode: 'off' }, unsharePid: false }, CI_POLICY, 'nocg', async (env) => {
      const escaped = await run(env, ['python3', '-c', DAEMON, marker, 'leave'], { timeoutMs: 10_000 });
      const afterEscape = await findProcessesWithCmdline(`sleep ${marker}`);
      const spin = await py(env, SPINNER, { timeoutMs: 1000 });
      return { escaped, afterEscape, spin };
    });
    expect(value.escaped.stdout).toContain('spawned');
    expect(value.escaped.result.resources).toBeUndefined();
    expect(value.escaped.result.oomKilled).toBe('unknown');
    expect(value.afterEscape).toEqual([]); // found by the environment marker in its environ, killed
    expect(value.spin.result.timedOut).toBe(true); // without cgroups the wall clock still ends it
    expect(leftovers).toEqual([]);
    expect(await cgroupDirsOf(runId)).toEqual([]);
  });

  live("workspace 'host-dir': a plain directory, so resources.diskMb is declared not enforced; /tmp is still a sized tmpfs", async () => {
    const backend = await createBwrapBackend({ workspace: 'host-dir' });
    expect(backend.capabilities(CI_POLICY).notEnforcedReasons?.['resources.diskMb']).toMatch(/plain host directory/);
    const policy: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, diskMb: 8 } };
    const { value: r, runId } = await withEnv({ workspace: 'host-dir' }, policy, 'hdir', (env) =>
      py(env, 'import os\nst = os.statvfs("/tmp")\nopen("out.txt", "w").write("ok")\nprint(st.f_blocks * st.f_frsize // 1048576)'),
    );
    expect(r.stdout.trim()).toBe('8');
    expect(await mountsOf(runId)).toEqual([]);
  });

  live('sweepStaleCgroups removes empty cgroups of dead runs, keeps live ones and (unless told to kill) ones with processes', async () => {
    const runId = newTestRunId('sweep');
    const v1Roots = (await readFile('/proc/self/mounts', 'utf8'))
      .split('\n')
      .map((l) => l.split(' '))
      .filter((f) => f[2] === 'cgroup' && ['memory', 'pids', 'freezer'].some((c) => (f[3] ?? '').split(',').includes(c)))
      .map((f) => f[1] ?? '');
    const stale = `sandcheck-${runId}-dead0001`;
    const busy = `sandcheck-${runId}-dead0002`;
    const foreign = `sandcheck-${runId}-not-ours`;
    // A Docker run's per-environment parent: bwrap's shape, no owner record here, and never bwrap's.
    const dockerParent = `sandcheck-docker-${runId}-dead0003`;
    // bwrap's shape without an owner record in this state dir: maybe a live run that keeps another state dir.
    const unowned = `sandcheck-${runId}-dead0004`;
    for (const r of v1Roots) for (const n of [stale, busy, foreign, dockerParent, unowned]) await mkdir(join(r, n));
    // stale and busy belong to a run whose owner process is gone (a pid that exited).
    const gone = execa('true');
    await gone;
    for (const key of [`${runId}-dead0001`, `${runId}-dead0002`]) {
      await mkdir(join(DEFAULT_STATE_DIR, key), { recursive: true });
      const record = {
        version: 1,
        runId,
        envId: key.slice(-8),
        ownerPid: gone.pid,
        ownerStartTime: 1,
        bootId: 'gone',
        mounted: false,
        createdAt: new Date().toISOString(),
      };
      await writeFile(join(DEFAULT_STATE_DIR, key, 'owner.json'), JSON.stringify(record));
    }
    const marker = `4004.${Date.now() % 1_000_000}`;
    const sleeper = execa('sleep', [marker], { reject: false, detached: true, stdio: 'ignore' });
    try {
      const pidsRoot = v1Roots.find((r) => r.endsWith('/pids')) ?? v1Roots[0] ?? '';
      await writeFile(join(pidsRoot, busy, 'cgroup.procs'), String(sleeper.pid));
      await withEnv({}, CI_POLICY, 'sweep', async (env) => {
        // The live environment belongs to another run id prefix; sweep this test's run only.
        const first = await sweepStaleCgroups(runId);
        expect(first.removed).toContain(`cgroup v1 ${stale}`);
        // Not a name this backend makes: left alone even though it is empty and has no owner.
        expect([...first.removed, ...first.kept.map((k) => k.name)].some((n) => n.includes(foreign))).toBe(false);
        expect(existsSync(join(v1Roots[0] ?? '', foreign))).toBe(true);
        expect(first.kept.find((k) => k.name === busy)?.reason).toMatch(/1 process/);
        expect(await findProcessesWithCmdline(`sleep ${marker}`)).toHaveLength(1);
        const all = await sweepStaleCgroups(env.id.split('-')[0]);
        expect(all.kept).toContainEqual({ name: `sandcheck-${env.id}`, reason: 'its run is alive' });
        const second = await sweepStaleCgroups(runId, { kill: true });
        expect(second.removed).toContain(`cgroup v1 ${busy}`);
        expect(second.kept.find((k) => k.name === unowned)?.reason).toMatch(/no owner record/);
        expect(existsSync(join(v1Roots[0] ?? '', unowned))).toBe(true);
        const sibling = await sweepStaleCgroups(`docker-${runId}`, { kill: true });
        expect([...sibling.removed, ...sibling.kept.map((k) => k.name)]).toEqual([]);
        expect(existsSync(join(v1Roots[0] ?? '', dockerParent))).toBe(true);
      });
      expect(await findProcessesWithCmdline(`sleep ${marker}`)).toEqual([]);
      expect((await cgroupDirsOf(runId)).map((d) => d.split('/').pop()).sort()).toEqual(v1Roots.flatMap(() => [unowned, foreign]).sort());
      // The dead run's environment roots went with its cgroups.
      expect(existsSync(join(DEFAULT_STATE_DIR, `${runId}-dead0001`))).toBe(false);
    } finally {
      sleeper.kill('SIGKILL');
      for (const r of v1Roots) for (const n of [stale, busy, foreign, dockerParent, unowned]) await rmdir(join(r, n)).catch(() => undefined);
      for (const key of [`${runId}-dead0001`, `${runId}-dead0002`]) await rm(join(DEFAULT_STATE_DIR, key), { recursive: true, force: true });
    }
  });
});

describe('bwrap backend: options', () => {
  it('the schema applies the hardened defaults and rejects bad values before anything runs', async () => {
    const d = BwrapOptionsSchema.parse({});
    expect(d).toMatchObject({
      extraBinds: [],
      shareNetwork: false,
      limits: { memory: true, pids: true, cpu: true },
      envFix: 'empty-launcher-env',
      unprivilegedUid: DEFAULT_UNPRIVILEGED_UID,
      unsharePid: true,
    });
    expect(DEFAULT_UNPRIVILEGED_UID).not.toBe(65534);
    expect(BwrapOptionsSchema.safeParse({ extraBinds: [{ src: 'relative', dest: '/x' }] }).success).toBe(false);
    expect(BwrapOptionsSchema.safeParse({ unprivilegedUid: 0 }).success).toBe(false);
    expect(BwrapOptionsSchema.safeParse({ limits: { pids: false } }).data?.limits).toEqual({ memory: true, pids: false, cpu: true });
    await expect(createBwrapBackend({ envFix: 'sometimes' } as unknown as BwrapOptions)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(createBwrapBackend({ bogus: true } as unknown as BwrapOptions)).rejects.toBeInstanceOf(SandcheckError);
  });
});

describe('bwrap backend: the command line', () => {
  const plan = (over: Partial<BoxPlan> = {}): BoxPlan => ({
    tools: { sh: '/bin/sh', bwrap: '/usr/bin/bwrap', setpriv: '/usr/bin/setpriv', nsenter: '/usr/bin/nsenter' },
    uid: 65529,
    unsharePid: true,
    shareNetwork: false,
    netnsPath: undefined,
    resolvConf: undefined,
    workHost: '/run/sandcheck/bwrap/r1-00000000/fs/work',
    tmpHost: undefined,
    tmpSizeBytes: 16 * MiB,
    readOnlyFiles: ['payload.py'],
    extraBinds: [],
    cwd: '',
    env: [['EXTRA', 'yes']],
    argv: ['python3', 'payload.py'],
    statusFd: 3,
    ...over,
  });
  const after = (argv: string[], flag: string, n = 1): string[] => {
    const i = argv.indexOf(flag);
    return i < 0 ? [] : argv.slice(i + 1, i + 1 + n);
  };

  it('hardened: setpriv drops uid, groups, caps and sets no_new_privs and a parent-death signal before bwrap; bwrap unshares everything', () => {
    const a = commandArgv(plan());
    expect(a.slice(0, 10)).toEqual([
      '/usr/bin/setpriv',
      '--reuid=65529',
      '--regid=65529',
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--pdeathsig=KILL',
      '--',
      '/usr/bin/bwrap',
    ]);
    for (const f of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--clearenv']) expect(a, f).toContain(f);
    expect(a).not.toContain('--share-net');
    expect(after(a, '--ro-bind', 2)).toEqual(['/usr', '/usr']);
    expect(after(a, '--size', 2)).toEqual([String(16 * MiB), '--tmpfs']); // --size must come right before --tmpfs
    expect(a.join(' ')).toContain('--ro-bind /run/sandcheck/bwrap/r1-00000000/fs/work/payload.py /work/payload.py');
    expect(after(a, '--chdir')).toEqual(['/work']);
    expect(after(a, '--json-status-fd')).toEqual(['3']);
    expect(a.slice(-3)).toEqual(['--', 'python3', 'payload.py']);
    expect(a.join(' ')).toContain('--setenv EXTRA yes');
  });

  it('in a lab nsenter comes first (it needs root), and a shared network binds the lab resolv.conf', () => {
    const a = commandArgv(plan({ netnsPath: '/run/netns/sc-x', shareNetwork: true, resolvConf: '/run/x/resolv.conf' }));
    expect(a.slice(0, 3)).toEqual(['/usr/bin/nsenter', '--net=/run/netns/sc-x', '--']);
    expect(a).toContain('--share-net');
    expect(a.join(' ')).toContain('--ro-bind /run/x/resolv.conf /etc/resolv.conf');
  });

  it('weakened: no pid namespace keeps every other unshare; no uid drop keeps only the parent-death signal', () => {
    const noPid = commandArgv(plan({ unsharePid: false }));
    expect(noPid).not.toContain('--unshare-all');
    expect(noPid).not.toContain('--unshare-pid');
    for (const f of ['--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-user']) expect(noPid, f).toContain(f);
    const asRoot = commandArgv(plan({ uid: undefined }));
    expect(asRoot.slice(0, 4)).toEqual(['/usr/bin/setpriv', '--pdeathsig=KILL', '--', '/usr/bin/bwrap']);
    expect(asRoot).not.toContain('--cap-drop');
  });
});
