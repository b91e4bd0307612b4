import { randomBytes } from 'node:crypto';
import { access, constants, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Backend, Environment, ExecResult } from '../../model/backend-contract.js';
import createDockerBackend, {
  DEFAULT_LAB_DAEMON_ROOT,
  LABEL_OWNER,
  LABEL_RUN,
  startLabDaemon,
  sweepDockerLeftovers,
  type DockerBackend,
  type DockerEnvironment,
  type LabDaemon,
  type ProfileName,
} from '../../backends/docker/index.js';
import { formatOwner } from '../../backends/docker/host.js';
import { selfOwner } from '../../backends/shared/process-owner.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';
import type { ProbeSpec } from '../../model/probe.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, probeLabSupport, type LabSession } from '../../lab/lab-session.js';
import { averageCorrect } from '../../tasks/average-correct/probe.js';
import { averageOffByOne } from '../../tasks/average-off-by-one/probe.js';
import { forkBomb } from '../../probes/fork-bomb/probe.js';
import { identityUid } from '../../probes/identity-uid/probe.js';
import { memoryBomb } from '../../probes/memory-bomb/probe.js';
import { metadataIpv4 } from '../../probes/metadata-ipv4/probe.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { wallClockSleep } from '../../probes/wall-clock-sleep/probe.js';

// ---------------------------------------------------------------- environment checks

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function skipReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `Docker backends need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'needs root (a lab namespace and a private dockerd inside it)';
  if (!(await executable('/usr/sbin/dockerd')) && !(await executable('/usr/bin/dockerd')))
    return 'dockerd is not installed (apt-get install -y docker.io runsc)';
  const lab = await probeLabSupport();
  if (!lab.available) return `no lab: ${lab.reason}`;
  return undefined;
}

const SKIP = await skipReason();
const HAVE_RUNSC = await executable('/usr/bin/runsc');
const live = SKIP ? it.skip : it;
const liveGvisor = SKIP || !HAVE_RUNSC ? it.skip : it;

const runId = `rdk${randomBytes(4).toString('hex')}`;
const daemonDir = join(DEFAULT_LAB_DAEMON_ROOT, runId);
const timings: string[] = [];
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;
const backends = new Map<string, DockerBackend>();

async function backendFor(profile: ProfileName, assumePolicy = false): Promise<DockerBackend> {
  const key = `${profile}${assumePolicy ? '+assume' : ''}`;
  let b = backends.get(key);
  if (!b) {
    if (!daemon) throw new Error('no lab daemon');
    b = await createDockerBackend({ profile, socketPath: daemon.socketPath, labNetnsPath: daemon.netnsPath, runId, assumePolicy });
    backends.set(key, b);
  }
  return b;
}

async function runProbes(backend: Backend, probes: readonly ProbeSpec[]): Promise<{ security: SecurityResult[]; task: TaskResult[] }> {
  if (!run) throw new Error('no run context');
  const r = await new Runner({ backend, policy: CI_POLICY, probes, run, concurrency: 2 }).run();
  return { security: r.security as SecurityResult[], task: r.task as TaskResult[] };
}

async function exec(
  env: Environment,
  argv: string[],
  o: { timeoutMs?: number; maxOutputBytes?: number; signal?: AbortSignal } = {},
): Promise<{ r: ExecResult; out: string; err: string; ms: number }> {
  let out = '';
  let err = '';
  const t0 = performance.now();
  const r = await env.exec({
    argv,
    timeoutMs: o.timeoutMs ?? 10_000,
    maxOutputBytes: o.maxOutputBytes ?? 1024 * 1024,
    stdout: { write: (c) => (out += Buffer.from(c).toString('utf8')) },
    stderr: { write: (c) => (err += Buffer.from(c).toString('utf8')) },
    signal: o.signal ?? new AbortController().signal,
  });
  return { r, out, err, ms: performance.now() - t0 };
}

/** Host processes whose command line names the daemon's directory (dockerd, containerd, shims, runsc). */
async function processesNaming(needle: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    const cmd = await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(needle)) out.push(`${e} ${cmd.replaceAll('\0', ' ').slice(0, 120)}`);
  }
  return out;
}

async function cgroupDirsOfRun(): Promise<string[]> {
  const out: string[] = [];
  for (const root of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) {
    for (const e of await readdir(join('/sys/fs/cgroup', root)).catch(() => [] as string[])) {
      if (e.startsWith(`sandcheck-docker-${runId}-`)) out.push(join(root, e));
    }
  }
  return out;
}

const byId = <T extends { id: string }>(xs: readonly T[]): Map<string, T> => new Map(xs.map((x) => [x.id, x]));

// ---------------------------------------------------------------- without a daemon

describe('docker backend: preflight without a daemon', () => {
  it('a socket path that does not exist → BACKEND_UNAVAILABLE with a hint, without waiting for a daemon', async () => {
    const backend = await createDockerBackend({ profile: 'docker-hardened', socketPath: `/run/sandcheck-no-such-${randomBytes(4).toString('hex')}.sock` });
    const t0 = performance.now();
    const err = await backend.preflight().then(
      () => undefined,
      (e: unknown) => e,
    );
    const ms = performance.now() - t0;
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('BACKEND_UNAVAILABLE');
    expect((err as SandcheckError).isUsage).toBe(true); // the CLI's exit 3
    expect((err as SandcheckError).hint).toMatch(/dockerd/);
    // Only a hang fails: the policy's whole queue/startup budget, not a performance target.
    expect(ms).toBeLessThan(CI_POLICY.attempts.queueStartupSeconds * 1000);
    timings.push(`preflight against a missing socket failed in ${Math.round(ms)} ms`);
  });

  it('a daemon behind DOCKER_HOST is not in the lab: network egress is declared not enforceable, whatever the profile', async () => {
    const backend = await createDockerBackend({ profile: 'docker-hardened', daemon: 'docker-host', assumePolicy: true });
    const caps = backend.capabilities(CI_POLICY);
    expect(caps.enforces).not.toContain('network.egress');
    expect(caps.notEnforcedReasons?.['network.egress']).toMatch(/not inside the run's lab/);
  });
});

// ---------------------------------------------------------------- a real daemon inside a real lab

describe(`docker backend: profiles on a lab daemon${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    if (SKIP) return;
    const t0 = performance.now();
    lab = await openLab(runId, packageRoot());
    const t1 = performance.now();
    daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: daemonDir });
    const t2 = performance.now();
    run = await openRunContext(runId, { lab });
    // The first preflight builds and imports the probe image; the others reuse it.
    await (await backendFor('docker-hardened')).preflight();
    const t3 = performance.now();
    timings.push(
      `lab ${Math.round(t1 - t0)} ms; lab daemon (${daemon.storageDriver}, runtimes ${daemon.runtimes.join('+')}) up in ${Math.round(t2 - t1)} ms; probe image built + imported in ${Math.round(t3 - t2)} ms`,
    );
  }, 120_000);

  afterAll(async () => {
    // Safety net only: the last test tears down and checks; these are idempotent.
    await run?.dispose().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await lab?.close().catch(() => undefined);
    if (timings.length > 0) console.log(`docker backend timings:\n  ${timings.join('\n  ')}`);
  }, 60_000);

  live(
    'preflight passes for each profile; capabilities are honest per profile',
    async () => {
      for (const p of ['docker-default', 'docker-hardened', ...(HAVE_RUNSC ? ['gvisor' as const] : [])] as const) {
        const t0 = performance.now();
        await (await backendFor(p)).preflight();
        timings.push(`preflight ${p}: ${Math.round(performance.now() - t0)} ms`);
      }
      const dflt = (await backendFor('docker-default')).capabilities(CI_POLICY);
      expect(dflt.enforces).not.toContain('network.egress');
      expect(dflt.notEnforcedReasons?.['network.egress']).toMatch(/bridge/);
      expect(dflt.enforces).not.toContain('identity.unprivileged');
      expect(dflt.enforces).not.toContain('resources.diskMb');
      expect(dflt.enforces).toContain('resources.memoryMb');
      const hard = (await backendFor('docker-hardened')).capabilities(CI_POLICY);
      expect(hard.enforces).toEqual(
        expect.arrayContaining([
          'network.egress',
          'identity.unprivileged',
          'resources.processes',
          'resources.memoryMb',
          'resources.diskMb',
          'files.readOnlyInput',
        ]),
      );
      expect(hard.enforces).not.toContain('output.sanitized');
      const gv = (await backendFor('gvisor')).capabilities(CI_POLICY);
      expect(gv.enforces).not.toContain('resources.processes');
      expect(gv.notEnforcedReasons?.['resources.processes']).toMatch(/gVisor/);
      expect(gv.enforces).toContain('network.egress');
    },
    60_000,
  );

  live(
    '--image: a user image already on the daemon is used as is; a missing one is refused (never pulled)',
    async () => {
      if (!daemon || !run) throw new Error('no daemon');
      const built = await (await backendFor('docker-hardened')).image();
      const missing = await createDockerBackend({
        profile: 'docker-hardened',
        socketPath: daemon.socketPath,
        labNetnsPath: daemon.netnsPath,
        image: 'sandcheck-no-such-image:1',
      });
      const err = await missing.preflight().catch((e: unknown) => e);
      expect((err as SandcheckError).code).toBe('BACKEND_UNAVAILABLE');
      expect((err as SandcheckError).hint).toMatch(/never pulls/);
      const own = await createDockerBackend({ profile: 'docker-hardened', socketPath: daemon.socketPath, labNetnsPath: daemon.netnsPath, image: built });
      await own.preflight();
      const env = await own.create(CI_POLICY, { runId, controllerEnv: run.controllerEnv, scratchDir: run.scratchDir, lab: lab!.handle });
      try {
        expect((await exec(env, ['python3', '-c', 'print("own image")'])).out).toBe('own image\n');
      } finally {
        expect((await env.destroy()).items).toEqual([]);
      }
    },
    30_000,
  );

  live(
    'cold start per profile (create → first exec), median of 3',
    async () => {
      if (!run) throw new Error('no run');
      for (const p of ['docker-default', 'docker-hardened', ...(HAVE_RUNSC ? ['gvisor' as const] : [])] as ProfileName[]) {
        const backend = await backendFor(p);
        const samples: { create: number; firstExecDone: number; cold: number; destroy: number }[] = [];
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now();
          const env = (await backend.create(CI_POLICY, {
            runId,
            controllerEnv: run.controllerEnv,
            scratchDir: run.scratchDir,
            lab: lab!.handle,
          })) as DockerEnvironment;
          const t1 = performance.now();
          const first = await exec(env, ['sh', '-c', ':']);
          const t2 = performance.now();
          const left = await env.destroy();
          const t3 = performance.now();
          expect(first.r).toMatchObject({ exitCode: 0, signal: null, timedOut: false, outputTruncated: false });
          expect(left.items).toEqual([]);
          expect(env.coldStartMs).toBeGreaterThan(0);
          samples.push({ create: t1 - t0, firstExecDone: t2 - t0, cold: env.coldStartMs ?? NaN, destroy: t3 - t2 });
        }
        const m = (k: keyof (typeof samples)[number]): number => Math.round(median(samples.map((s) => s[k])));
        timings.push(
          `cold start ${p}: create ${m('create')} ms; create → first exec (sh -c :) done ${m('firstExecDone')} ms; coldStartMs (create → exec running) ${m('cold')} ms; destroy ${m('destroy')} ms`,
        );
        expect(m('firstExecDone')).toBeLessThan(CI_POLICY.attempts.queueStartupSeconds * 1000);
      }
    },
    120_000,
  );

  live(
    'hardened environment: files in and out, read-only inputs, links reported not followed, output cap, abort, host view',
    async () => {
      if (!run) throw new Error('no run');
      const backend = await backendFor('docker-hardened');
      const env = (await backend.create(CI_POLICY, {
        runId,
        controllerEnv: run.controllerEnv,
        scratchDir: run.scratchDir,
        lab: lab!.handle,
      })) as DockerEnvironment;
      try {
        await env.putFiles([
          { path: 'input/data.csv', content: Buffer.from('a,b\n1,2\n'), readOnly: true },
          { path: 'notes.txt', content: Buffer.from('mine') },
        ]);
        const code = [
          'import os, json',
          'res = {"uid": os.getuid()}',
          'for op, fn in [("unlink", lambda: os.unlink("input/data.csv")), ("write", lambda: open("input/data.csv", "w")), ("rename", lambda: os.rename("input/data.csv", "x")), ("etc", lambda: open("/etc/x", "w"))]:',
          '    try:',
          '        fn(); res[op] = "ok"',
          '    except OSError as e:',
          '        res[op] = e.errno',
          'open("out.txt", "w").write("result")',
          'os.symlink("/etc/passwd", "link")',
          'os.mkfifo("pipe")',
          'open("big.bin", "wb").write(b"x" * 200000)',
          'open("h1", "w").write("linked")',
          'os.link("h1", "hard")',
          'print(json.dumps(res))',
        ].join('\n');
        const first = await exec(env, ['python3', '-c', code]);
        expect(first.r.exitCode, first.err).toBe(0);
        const res = JSON.parse(first.out) as Record<string, unknown>;
        expect(res).toEqual({ uid: 65529, unlink: 1, write: 13, rename: 1, etc: 30 }); // EPERM, EACCES, EPERM, EROFS
        const paths = ['out.txt', 'link', 'pipe', 'big.bin', 'input/data.csv', 'input', 'nope', '../escape', 'hard'];
        const archives = vi.spyOn(backend.client, 'getArchive');
        const files = await env.getFiles(paths, { maxBytesPerFile: 100_000 });
        // One archive of the whole workspace answers the plain entries; a link is described by the daemon's stat, and a
        // tar hard-link entry (whichever of the two names came second) is asked for on its own.
        const asked = archives.mock.calls.map((c) => c[1]);
        archives.mockRestore();
        expect(asked.filter((p) => p === '/work')).toHaveLength(1);
        expect(asked.filter((p) => p !== '/work' && p !== '/work/hard')).toEqual([]);
        const f = byId(files.map((x) => ({ ...x, id: x.path })));
        // …and each answer is exactly what asking for that file alone gives.
        for (const p of paths) expect((await env.getFiles([p], { maxBytesPerFile: 100_000 }))[0], p).toEqual(files.find((x) => x.path === p));
        expect(Buffer.from(f.get('out.txt')?.content ?? []).toString()).toBe('result');
        expect(f.get('link')).toMatchObject({ kind: 'symlink', linkTarget: '/etc/passwd' });
        expect(f.get('link')?.content).toBeUndefined();
        expect(f.get('pipe')?.kind).toBe('fifo');
        expect(f.get('big.bin')).toMatchObject({ kind: 'file', size: 200000 });
        expect(f.get('big.bin')?.content).toBeUndefined();
        expect(Buffer.from(f.get('input/data.csv')?.content ?? []).toString()).toBe('a,b\n1,2\n');
        expect(f.get('input')?.kind).toBe('directory');
        expect(f.get('nope')?.kind).toBe('missing');
        expect(f.get('../escape')?.kind).toBe('other');
        // The link count comes from the host side of the workspace volume: a hard-linked file says so.
        expect(f.get('hard')).toMatchObject({ kind: 'hardlink', nlink: 2 });
        expect(f.get('hard')?.content).toBeUndefined();
        expect(f.get('out.txt')?.nlink).toBe(1);
        // A symlinked directory on the way is refused before the daemon can resolve it.
        await exec(env, ['python3', '-c', 'import os; os.symlink("/etc", "etcdir")']);
        expect((await env.getFiles(['etcdir/passwd'], { maxBytesPerFile: 10_000 }))[0]).toMatchObject({ kind: 'symlink' });

        // The host's view of the box while it runs: the dedicated uid, no capabilities, no_new_privs.
        const seen: number[] = [];
        const running = exec(env, ['python3', '-c', 'import time; time.sleep(1.2)']);
        await new Promise((r) => setTimeout(r, 600));
        seen.push(...((await env.hostPids()) ?? []));
        await running;
        expect(seen.length).toBeGreaterThan(0);
        for (const pid of seen) {
          const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
          if (!status) continue;
          expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe('65529');
          expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1]).toBe('0000000000000000');
          expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1]).toBe('1');
        }

        // The harness's abort stops it at once (and takes the environment down).
        const ac = new AbortController();
        // Aborted once the sleeper runs (seen from the host): on a busy machine a fixed delay can fall before its start.
        const abortWhenRunning = async (): Promise<void> => {
          for (let i = 0; i < 200 && ((await env.hostPids()) ?? []).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
          ac.abort();
        };
        const [aborted] = await Promise.all([exec(env, ['python3', '-c', 'import time; time.sleep(30)'], { signal: ac.signal }), abortWhenRunning()]);
        // The abort stopped it (SIGKILL, not its timer); the bound only catches an abort that waits out the 30 s sleep.
        expect(aborted.r).toMatchObject({ signal: 'SIGKILL', timedOut: false });
        expect(aborted.ms).toBeLessThan(30_000);
        const after = await exec(env, ['sh', '-c', ':']);
        expect(after.r.startError).toMatch(/not running/);
      } finally {
        expect((await env.destroy()).items).toEqual([]);
      }
      // The output cap is the backend's own: at most maxOutputBytes forwarded, then the container is killed.
      const env2 = await backend.create(CI_POLICY, { runId, controllerEnv: run.controllerEnv, scratchDir: run.scratchDir, lab: lab!.handle });
      try {
        const flood = await exec(env2, ['python3', '-c', 'import sys\nwhile True: sys.stdout.write("y" * 65536)'], { maxOutputBytes: 100_000 });
        expect(flood.out.length).toBe(100_000);
        expect(flood.r).toMatchObject({ outputTruncated: true, signal: 'SIGKILL', timedOut: false });
      } finally {
        expect((await env2.destroy()).items).toEqual([]);
      }
    },
    60_000,
  );

  live(
    'docker-default: the bridge container reaches the lab metadata decoy and runs as root — crossed, whether it claims the policy as a trusting team would or honestly claims neither (run anyway: crossed — not claimed)',
    async () => {
      const honest = await runProbes(await backendFor('docker-default'), [metadataIpv4, identityUid]);
      for (const r of honest.security) {
        expect(`${r.id}: ${r.verdict}, claimed ${r.claimed}`, r.reason).toBe(`${r.id}: crossed, claimed false`);
        expect(r.evidence.some((e) => e.source === 'outside')).toBe(true);
      }
      const { security } = await runProbes(await backendFor('docker-default', true), [metadataIpv4, identityUid]);
      const r = byId(security);
      const meta = r.get('metadata-ipv4');
      expect(meta?.verdict, meta?.reason).toBe('crossed');
      // Outside evidence: the lab's metadata decoy logged the contact and/or the packet witness saw it.
      expect(meta?.evidence.some((e) => e.source === 'outside' && (e.witness === 'decoy:metadata' || e.witness === 'packet-witness'))).toBe(true);
      expect(meta?.evidence.some((e) => e.witness === 'decoy:metadata')).toBe(true);
      const uid = r.get('identity-uid');
      expect(uid?.verdict, uid?.reason).toBe('crossed');
      expect(uid?.reason).toMatch(/root/);
    },
    90_000,
  );

  const hardenedLike = async (profile: ProfileName): Promise<void> => {
    const backend = await backendFor(profile);
    const probes: ProbeSpec[] = [metadataIpv4, secretDecoyEnv, wallClockSleep, memoryBomb, forkBomb, averageCorrect, averageOffByOne];
    const t0 = performance.now();
    const { security, task } = await runProbes(backend, probes);
    timings.push(`${profile}: ${probes.length} probes/tasks through the Runner in ${Math.round(performance.now() - t0)} ms`);
    const r = byId(security);
    for (const id of ['metadata-ipv4', 'secret-decoy-env', 'wall-clock-sleep']) {
      expect(r.get(id)?.verdict, `${profile} ${id}: ${r.get(id)?.reason}`).toBe('held');
    }
    // gVisor's sentry may stop the allocation itself before the host cgroup counts anything: then only
    // the runtime's word (OOMKilled) says so, and a claim is not proof. On a busy machine the sentry may
    // also allocate so slowly that the wall clock stops it first. Never crossed, never held on a claim.
    const memVerdict = r.get('memory-bomb');
    const gvisorInconclusive = profile === 'gvisor' && memVerdict?.verdict === 'inconclusive';
    if (gvisorInconclusive) expect(memVerdict.reason).toMatch(/never shown to act|the wall clock, not the memory limit, stopped it/);
    else expect(memVerdict?.verdict, `${profile} memory-bomb: ${memVerdict?.reason}`).toBe('held');
    // The backend's own clock stopped the sleeper, before the harness deadline.
    const sleep = r.get('wall-clock-sleep')?.observation;
    expect(sleep?.killedBy).toBe('none');
    expect(sleep?.backendReport.timedOut).toBe(true);
    expect(sleep?.signal).toBe('SIGKILL');
    // killedBy none + timedOut: the backend's timer came before the harness deadline; not before the policy wall.
    expect(sleep?.wallMs ?? 0).toBeGreaterThanOrEqual(CI_POLICY.resources.wallSeconds * 1000 - 20);
    timings.push(`${profile} wall-clock-sleep: stopped by the backend after ${Math.round(sleep?.wallMs ?? 0)} ms (policy 5000)`);
    // OOM evidence from outside: the cgroup's oom_kill counter or the daemon's OOMKilled.
    const mem = r.get('memory-bomb');
    const wallStopped = gvisorInconclusive && /the wall clock/.test(mem?.reason ?? '');
    // Stopped by one of the backend's own limits either way, the memory limit or the wall clock.
    if (wallStopped) expect(mem?.observation?.backendReport.oomKilled === true || mem?.observation?.backendReport.timedOut === true).toBe(true);
    else expect(mem?.observation?.backendReport.oomKilled).toBe(true);
    expect(mem?.reason).toMatch(/OOM/);
    expect(mem?.observation?.resources?.memoryPeakBytes ?? 0).toBeGreaterThan(0);
    expect(mem?.observation?.resources?.memoryPeakBytes ?? Infinity).toBeLessThanOrEqual(CI_POLICY.resources.memoryMb * 2 ** 20 * 1.1);
    timings.push(`${profile} memory-bomb: ${mem?.reason}`);
    const fork = r.get('fork-bomb');
    if (profile === 'gvisor') {
      // The policy requires a process limit that this runsc build cannot give: not claimed, run anyway, and the
      // bomb is seen passing the policy's limit (a failure, not a skip). The sandbox's memory limit kills the bomb at
      // 60-70 processes (python forks cost the Sentry memory), so whether the host's 100 ms sampling saw more than 64
      // alive at once is a race: measured 65-69 on an idle machine, 59-65 beside other work. Never held.
      const got = `${fork?.verdict}, claimed ${fork?.claimed}`;
      if (got === 'inconclusive, claimed false') {
        expect(fork?.reason).toMatch(/no refused fork was counted from outside \(peak (5[6-9]|6\d) of 64\)/);
        expect(fork?.evidence.some((e) => /killed by the OOM killer/.test(e.detail))).toBe(true);
      } else {
        expect(got, fork?.reason).toBe('crossed, claimed false');
        expect(fork?.reason).toMatch(/processes ran at once, past the limit of/);
      }
    } else {
      expect(fork?.verdict, fork?.reason).toBe('held');
      expect(fork?.observation?.resources?.pidsMaxEvents ?? 0).toBeGreaterThan(0);
    }
    const t = byId(task);
    expect(t.get('average-correct')?.verdict, t.get('average-correct')?.reason).toBe('accepted');
    expect(t.get('average-correct')?.outcome).toBe('as-expected');
    expect(t.get('average-off-by-one')?.verdict, t.get('average-off-by-one')?.reason).toBe('rejected');
    expect(t.get('average-off-by-one')?.outcome).toBe('as-expected');
  };

  live(
    'docker-hardened: metadata, decoy env, sleep, memory bomb, fork bomb held; the average tasks judged right',
    () => hardenedLike('docker-hardened'),
    120_000,
  );

  liveGvisor(
    'gvisor: the same held, fork bomb crossed — not claimed (runsc pids limit), the average tasks judged right',
    () => hardenedLike('gvisor'),
    120_000,
  );

  live(
    'a daemon reached through DOCKER_HOST works, but is not trusted with network probes',
    async () => {
      if (!daemon || !run) throw new Error('no daemon');
      const saved = process.env.DOCKER_HOST;
      process.env.DOCKER_HOST = `unix://${daemon.socketPath}`;
      let backend: DockerBackend;
      try {
        backend = await createDockerBackend({ profile: 'docker-hardened', daemon: 'docker-host', runId });
      } finally {
        if (saved === undefined) delete process.env.DOCKER_HOST;
        else process.env.DOCKER_HOST = saved;
      }
      await backend.preflight();
      expect(backend.capabilities(CI_POLICY).notEnforcedReasons?.['network.egress']).toMatch(/DOCKER_HOST|not inside the run's lab/);
      const { security } = await runProbes(backend, [metadataIpv4]);
      expect(security[0]?.verdict).toBe('not-applicable');
      const env = await backend.create(CI_POLICY, { runId, controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
      try {
        const r = await exec(env, ['python3', '-c', 'print(6 * 7)']);
        expect(r.out).toBe('42\n');
      } finally {
        expect((await env.destroy()).items).toEqual([]);
      }
    },
    30_000,
  );

  live(
    "private mode: openRun() starts the run's own daemon (here without a lab: an empty namespace), a bridge container reaches nothing, close() removes it all",
    async () => {
      if (!run) throw new Error('no run');
      const privRun = `${runId}p`;
      const backend = await createDockerBackend({ profile: 'docker-default', runId: privRun });
      expect(backend.mode).toBe('private');
      await backend.preflight(); // fast checks only: root, dockerd, nsenter/unshare
      expect(() => backend.client).toThrow(/openRun/);
      const handle = await backend.openRun({ runId: privRun });
      const privDir = handle.daemon?.dir ?? '';
      timings.push(`private daemon (empty namespace) + image ready in ${Math.round(handle.readyMs)} ms`);
      try {
        const env = await backend.create(CI_POLICY, { runId: privRun, controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
        try {
          const code =
            'import socket\ns = socket.socket(); s.settimeout(2)\ntry:\n    s.connect(("169.254.169.254", 80)); print("CONNECTED")\nexcept OSError as e:\n    print("refused", e.errno)';
          const r = await exec(env, ['python3', '-c', code]);
          expect(r.out).toMatch(/^refused/);
        } finally {
          expect((await env.destroy()).items).toEqual([]);
        }
      } finally {
        expect((await handle.close()).items).toEqual([]);
      }
      expect(await processesNaming(privDir)).toEqual([]);
      expect(await stat(privDir).catch(() => undefined)).toBeUndefined();
    },
    60_000,
  );

  live(
    'a sweep removes what a dead run left on the daemon and nothing of a live one',
    async () => {
      if (!daemon) throw new Error('no daemon');
      const c = daemon.client;
      const boot = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
      const me = formatOwner(await selfOwner());
      const opts = { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' };
      await c.createVolume({
        Name: `${runId}-dead`,
        Driver: 'local',
        DriverOpts: opts,
        Labels: { [LABEL_RUN]: 'rdeadrun', [LABEL_OWNER]: `4194000/1/${boot}` },
      });
      await c.createVolume({ Name: `${runId}-live`, Driver: 'local', DriverOpts: opts, Labels: { [LABEL_RUN]: 'rliverun', [LABEL_OWNER]: me } });
      await c.createVolume({ Name: `${runId}-foreign`, Driver: 'local', DriverOpts: opts, Labels: { other: 'x' } });
      const report = await sweepDockerLeftovers(c, { keepRunId: runId });
      expect(report.removed).toEqual([`volume ${runId}-dead`]);
      expect(await c.volumeExists(`${runId}-live`)).toBe(true);
      expect(await c.volumeExists(`${runId}-foreign`)).toBe(true);
      for (const v of ['live', 'foreign']) await c.removeVolume(`${runId}-${v}`);
    },
    30_000,
  );

  live(
    'after the file: no container, volume, network or shim of the run is left; the daemon and the lab namespace are gone',
    async () => {
      if (!daemon || !lab || !run) throw new Error('not started');
      const c = daemon.client;
      expect(await c.listContainers([`${LABEL_RUN}=${runId}`])).toEqual([]);
      expect(await c.listVolumes([`${LABEL_RUN}=${runId}`])).toEqual([]);
      expect(await c.listNetworks([`${LABEL_RUN}=${runId}`])).toEqual([]);
      expect((await c.listContainers([])).map((x) => x.name)).toEqual([]);
      expect(await cgroupDirsOfRun()).toEqual([]);
      await run.dispose();
      const t0 = performance.now();
      const stopped = await daemon.stop();
      timings.push(`lab daemon stopped and cleaned in ${Math.round(performance.now() - t0)} ms`);
      expect(stopped.leftovers).toEqual([]);
      expect(await processesNaming(daemonDir)).toEqual([]);
      expect(await processesNaming(`-address ${daemonDir}`)).toEqual([]);
      expect(await stat(`/proc/${daemon.pid}`).catch(() => undefined)).toBeUndefined();
      expect(await stat(daemonDir).catch(() => undefined)).toBeUndefined();
      expect((await readFile('/proc/self/mounts', 'utf8')).includes(daemonDir)).toBe(false);
      const closed = await lab.close();
      expect(closed.leftovers).toEqual([]);
      const ns = await execa('ip', ['netns', 'list'], { reject: false });
      expect(ns.stdout.split('\n').map((l) => l.split(' ')[0])).not.toContain(`sc-${runId}`);
    },
    60_000,
  );
});
