import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Environment, ExecRequest, ExecResult } from '../../backends/contract.js';
import { FakeBackend, type FakeExecInput } from '../../backends/fake/fake-backend.js';
import { boxPlacement, placementRefusal } from '../../harness/network-placement.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { metadataIpv4 } from '../../probes/metadata-ipv4/probe.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

/** Runs the requested program for real on this host (optionally in a network namespace of its own) until aborted. */
function realProgram(request: Pick<ExecRequest, 'argv' | 'signal'>, ownNetns: boolean, started: ChildProcess[]): Promise<ExecResult> {
  // The system interpreter, never a PATH shim (pyenv's spawns hundreds of processes first on a busy machine).
  const [first = 'python3', ...rest] = request.argv;
  const file = first === 'python3' ? '/usr/bin/python3' : first;
  // Nothing here makes a network call: the program only sleeps.
  const child = ownNetns ? spawn('unshare', ['--net', '--', file, ...rest], { stdio: 'ignore' }) : spawn(file, rest, { stdio: 'ignore' });
  started.push(child);
  request.signal.addEventListener('abort', () => child.kill('SIGKILL'), { once: true });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ exitCode: code, signal, timedOut: false, oomKilled: false, outputTruncated: false })));
}

function envRunning(ownNetns: boolean, started: ChildProcess[], withPids = true): Environment {
  return {
    id: 'placement-test',
    putFiles: async () => undefined,
    getFiles: async () => [],
    exec: (request) => realProgram(request, ownNetns, started),
    ...(withPids ? { hostPids: async () => started.flatMap((c) => (c.pid === undefined ? [] : [c.pid])) } : {}),
    destroy: async () => ({ items: [] }),
  };
}

const root = process.getuid?.() === 0;

describe('network probes run only where a box cannot reach the real network', () => {
  it("boxPlacement reads the box's network namespace from the host: the host's own, another, or nothing to tell", async () => {
    const started: ChildProcess[] = [];
    const inHost = await boxPlacement(envRunning(false, started));
    expect(inHost?.inHost.length).toBe(1);
    expect(placementRefusal(inHost)).toMatch(/^not run, for safety: .* ran in the host's own network namespace \(net:\[\d+\]\)/);
    expect(await boxPlacement(envRunning(false, started, false))).toBeUndefined();
    if (root) {
      const own = await boxPlacement(envRunning(true, started));
      expect(own?.seen).toBeGreaterThan(0);
      expect(own?.inHost).toEqual([]);
      expect(placementRefusal(own)).toBeUndefined();
    }
    for (const c of started) c.kill('SIGKILL');
  }, 30_000);

  it('a run with a lab whose backend puts its box in the host namespace never executes a network payload', async () => {
    const started: ChildProcess[] = [];
    const payloads: string[] = [];
    const script = ({ args }: FakeExecInput) => {
      payloads.push(args.probe);
      return { exitCode: 0 };
    };
    // The fake runs the harness's own placement program for real (it sleeps, in the host's namespace), and nothing else.
    const backend = new FakeBackend(script, undefined, () => started.flatMap((c) => (c.pid === undefined ? [] : [c.pid])));
    const create = backend.create.bind(backend);
    backend.create = async (policy, ctx) => {
      const env = await create(policy, ctx);
      const scripted = env.exec.bind(env);
      env.exec = (request) => (String(request.argv[3] ?? '').startsWith('sandcheck-placement-') ? realProgram(request, false, started) : scripted(request));
      return env;
    };
    const base = await openRunContext('rtestplace');
    // A lab in name only: the fake never enters it, and no payload may run to need it.
    const run: RunContext = {
      ...base,
      lab: { netnsPath: '/run/netns/sc-rtestplace', resolvConfPath: '/nonexistent' },
      labTraffic: async () => ({ events: [], packets: [], witness: { saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] } }),
      proveLabWitness: async () => ({ marker: 'x', sentMs: 0, doneMs: 0, ok: true, notes: [] }),
    };
    try {
      const { security } = await new Runner({ backend, policy: FAST_POLICY, probes: [metadataIpv4], run, graceMs: 300 }).run();
      expect(security.map((r) => `${r.id}: ${r.verdict}: ${r.harnessError?.code}`)).toEqual(['metadata-ipv4: inconclusive: UNSAFE_NETWORK']);
      expect(payloads).toEqual([]);
    } finally {
      await base.dispose();
      for (const c of started) c.kill('SIGKILL');
    }
  }, 30_000);
});
