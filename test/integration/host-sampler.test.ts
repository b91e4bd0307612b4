/**
 * Finding 9 of issue 10: a runtime's init (runc:[2:INIT], bwrap's child before exec) runs as root for a
 * moment on the box's pid before it execs the payload. The sampler must judge the box's own program only,
 * so the verdict never depends on when it looked. Here a root shell stands in for that init: it execs the
 * payload's interpreter as an unprivileged uid after a pause the sampler is sure to see.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Environment } from '../../model/backend-contract.js';
import { findBinary } from '../../core/find-binary.js';
import { packageRoot } from '../../core/paths.js';
import { startProcessSampler } from '../../harness/host-observers.js';
import { readRootView, rootViewOf } from '../../lab/root-view.js';
import { watchForProcess } from '../../harness/process-watch.js';
import type { ExecObservation } from '../../model/observation.js';
import type { Observation, ProbeContext } from '../../model/probe.js';
import { CI_POLICY } from '../../model/policy.js';
import { makeCanaries } from '../../lab/canaries.js';
import { identityUid } from '../../probes/identity-uid/probe.js';
import { identityNoNewPrivs } from '../../probes/identity-no-new-privs/probe.js';
import { fakeObservation } from '../helpers/observation.js';

const root = process.getuid?.() === 0;
const setpriv = await findBinary('setpriv');
const SKIP = !root ? 'needs root (setpriv to an unprivileged uid)' : !setpriv ? 'setpriv is not installed' : undefined;
const BOX_UID = 65529;

/** The judges' context for an execution whose payload's argv carries `nonce` (how the host ties a sample to it). */
const ctxFor = (nonce: string): ProbeContext => ({
  policy: CI_POLICY,
  runId: 'rsampler',
  nonce,
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
});

function fakeEnv(pids: () => number[]): Environment {
  return {
    id: 'sampler-test',
    putFiles: () => Promise.resolve(),
    exec: () => Promise.reject(new Error('not used')),
    getFiles: () => Promise.resolve([]),
    hostPids: () => Promise.resolve(pids()),
    destroy: () => Promise.resolve({ items: [] }),
  };
}

/** What the sampler recorded, as a judge sees it: a payload that answered its challenge and finished. */
function observation(hostProcesses: ExecObservation['hostProcesses']): Observation {
  return fakeObservation(hostProcesses ? { hostProcesses } : {}, { finished: true });
}

describe.skipIf(SKIP !== undefined)(`process sampler: the box's own program, not the runtime's init${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('a root init that later execs the payload unprivileged is not judged; the payload is, as soon as it runs', async () => {
    // root sh (the "init": euid 0, NoNewPrivs 0) → 700 ms later exec setpriv → exec python3 as the box uid.
    const nonce = `n${process.pid}init`;
    const init: ChildProcess = spawn(
      '/bin/sh',
      [
        '-c',
        `sleep 0.7; exec ${setpriv} --reuid=${BOX_UID} --regid=${BOX_UID} --clear-groups --no-new-privs /usr/bin/python3 -c "import time; time.sleep(1.2)" ${nonce}`,
      ],
      {
        stdio: 'ignore',
      },
    );
    const pid = init.pid;
    if (pid === undefined) throw new Error('spawn failed');
    const exited = new Promise((r) => init.once('exit', r));
    const sampler = startProcessSampler(
      fakeEnv(() => [pid]),
      { intervalMs: 50 },
    );
    await exited;
    const { processes, maxConcurrent } = await sampler.stop();
    expect(maxConcurrent).toBe(1);
    // Only the payload's interpreter was kept: never the root shell that came first on the same pid.
    expect(processes.length).toBeGreaterThan(0);
    expect(
      processes.every((p) => p.command.startsWith('python3') && p.effectiveUid === BOX_UID && p.noNewPrivs === 1),
      JSON.stringify(processes),
    ).toBe(true);
    expect(identityUid.judge(observation(processes), ctxFor(nonce)).verdict).toBe('held');
    expect(identityNoNewPrivs.judge(observation(processes), ctxFor(nonce)).verdict).toBe('held');
    // The same samples judged for another execution: none of them is shown to be its payload.
    expect(identityUid.judge(observation(processes), ctxFor('another-nonce')).verdict).toBe('inconclusive');
  }, 20_000);

  it('what the payload starts counts too (a planted binary), and a program never seen is inconclusive, not held', async () => {
    const py = spawn('/usr/bin/python3', ['-c', 'import subprocess; subprocess.call(["sleep", "1"])'], { stdio: 'ignore' });
    const pid = py.pid;
    if (pid === undefined) throw new Error('spawn failed');
    const exited = new Promise((r) => py.once('exit', r));
    const children = async (): Promise<number[]> => {
      const { readFile } = await import('node:fs/promises');
      const kids = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
      return kids.trim().split(/\s+/).filter(Boolean).map(Number);
    };
    let kids: number[] = [];
    const tracker = setInterval(() => void children().then((k) => (kids = k.length > 0 ? k : kids)), 20);
    const sampler = startProcessSampler(
      fakeEnv(() => [pid, ...kids]),
      { intervalMs: 50 },
    );
    await exited;
    clearInterval(tracker);
    const { processes } = await sampler.stop();
    expect(
      processes.some((p) => p.command === 'sleep'),
      JSON.stringify(processes),
    ).toBe(true);
    expect(identityUid.judge(observation([]), ctxFor('any')).verdict).toBe('inconclusive');
  }, 20_000);

  it("a payload's hold ends once the host has looked at this execution's payload (release), and holds its whole cap otherwise", async () => {
    // The payload helper's own hold, capped at 8 s, as an unprivileged process the sampler looks at; its argv carries the nonce.
    const nonce = `n${process.pid}x${Date.now()}`;
    const holder = (): ChildProcess =>
      spawn(
        setpriv ?? 'setpriv',
        [
          '--reuid=' + BOX_UID,
          '--regid=' + BOX_UID,
          '--clear-groups',
          '--no-new-privs',
          '/usr/bin/python3',
          '-c',
          'import sys; sys.path.insert(0, sys.argv[1]); import sandcheck_payload as sc; sc.hold(8)',
          join(packageRoot(), 'probes', '_shared'),
          JSON.stringify({ nonce }),
        ],
        { stdio: 'ignore' },
      );
    const run = async (
      release: string,
      opts: { rootPaths?: string[]; before?: () => number[] } = {},
    ): Promise<{ ms: number; code: number | null; processes: ExecObservation['hostProcesses'] }> => {
      const child = holder();
      const pid = child.pid;
      if (pid === undefined) throw new Error('spawn failed');
      const t0 = performance.now();
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      const sampler = startProcessSampler(
        fakeEnv(() => [...(opts.before?.() ?? []), pid]),
        { intervalMs: 50, release, ...(opts.rootPaths ? { rootPaths: opts.rootPaths } : {}) },
      );
      // Without a release the hold outlives this window; the test then ends it (it is this test's own child).
      const code = await Promise.race([exited, new Promise<'holding'>((r) => setTimeout(() => r('holding'), 2500))]);
      const ms = performance.now() - t0;
      if (code === 'holding') {
        child.kill('SIGKILL');
        await exited;
      }
      const { processes } = await sampler.stop();
      return { ms, code: code === 'holding' ? null : code, processes };
    };
    const released = await run(nonce);
    expect(released.code, 'a released hold exits 0 on its own').toBe(0);
    expect(released.ms).toBeLessThan(2500);
    // What the host needed was kept before the release: the payload's identity, seen from outside.
    expect(identityUid.judge(observation(released.processes), ctxFor(nonce)).verdict).toBe('held');
    // A python3 process of the box whose argv does not carry this execution's nonce is never signalled.
    const other = await run(`other-${nonce}`);
    expect(other.code, "released only for this execution's nonce: still holding at 2.5 s").toBeNull();

    // A probe that asked for paths is released only with its root view taken…
    const viewed = await run(nonce, { rootPaths: ['/etc/hostname'] });
    expect(viewed.code).toBe(0);
    const first = viewed.processes?.[0];
    expect(first && rootViewOf(first)?.cmdline).toContain(nonce);
    // …and holds its cap when the sampler's root views went to other processes of the program first.
    const others = Array.from({ length: 4 }, () => spawn('/usr/bin/python3', ['-c', 'import time; time.sleep(6)'], { stdio: 'ignore' }));
    try {
      const othersPids = others.map((o) => o.pid ?? 0);
      const spent = await run(nonce, { rootPaths: ['/etc/hostname'], before: () => othersPids });
      expect(spent.code, 'no root view of its own: still holding at 2.5 s').toBeNull();
    } finally {
      for (const o of others) o.kill('SIGKILL');
    }
  }, 30_000);

  it('a process without arguments to read (mid-exec, or a zombie) gives no root view: the sampler looks again later', async () => {
    // The parent never reaps its child: the child stays a zombie, whose cmdline is empty, as mid-exec.
    const parent = spawn('/usr/bin/python3', ['-c', 'import os,sys,time\npid=os.fork()\nif pid==0: os._exit(0)\nprint(pid, flush=True); time.sleep(10)'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const zombie = Number(await new Promise<string>((r) => parent.stdout?.once('data', (d: Buffer) => r(d.toString().trim()))));
      expect(zombie).toBeGreaterThan(0);
      // Until the child has exited it is still a copy of its parent, arguments and all.
      for (let i = 0; i < 200 && !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${zombie}/stat`, 'utf8')); i++) await new Promise((r) => setTimeout(r, 10));
      expect(readFileSync(`/proc/${zombie}/stat`, 'utf8')).toMatch(/^\d+ \(.*\) Z/);
      expect(await readRootView(zombie, ['/etc/hostname'])).toBeUndefined();
      const live = await readRootView(parent.pid ?? 0, ['/etc/hostname']);
      expect(live?.cmdline).toContain('os._exit');
      expect(live?.entries[0]?.path).toBe('/etc/hostname');
    } finally {
      parent.kill('SIGKILL');
    }
  }, 20_000);

  it("the host's scan releases a marked child holding with the payload's hold once it has seen it", async () => {
    const marker = `sandcheck-survivor-sampler-test-${process.pid}`;
    const hold = 'import sys; sys.path.insert(0, sys.argv[2]); import sandcheck_payload as sc; sc.hold(float(sys.argv[1]))';
    const child = spawn('/usr/bin/python3', ['-c', hold, '8', join(packageRoot(), 'probes', '_shared'), marker], { stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const t0 = performance.now();
    const watch = watchForProcess(marker, { release: true });
    const code = await Promise.race([exited, new Promise<'holding'>((r) => setTimeout(() => r('holding'), 2500))]);
    if (code === 'holding') child.kill('SIGKILL');
    expect(await watch.stop()).toBe(true);
    expect(code, 'released before 2.5 s of its 8 s hold').toBe(0);
    expect(performance.now() - t0).toBeLessThan(2500);
  }, 20_000);
});
