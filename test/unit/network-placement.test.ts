import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { Environment, ExecRequest, ExecResult } from '../../model/backend-contract.js';
import { FakeBackend, type FakeExecInput } from '../../backends/fake/fake-backend.js';
import { boxPlacement, placementLine, placementRefusal } from '../../harness/network-placement.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { metadataIpv4 } from '../../probes/metadata-ipv4/probe.js';
import { metadataIpv6 } from '../../probes/metadata-ipv6/probe.js';
import { publicEgressIpv4 } from '../../probes/public-egress-ipv4/probe.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

/** Runs the requested program for real on this host (optionally in a network namespace of its own) until aborted. */
/** Where the fake box's program runs: the host's namespace, a fresh one of its own (only lo), or a named one. */
type Where = false | true | { netnsPath: string };

function realProgram(request: Pick<ExecRequest, 'argv' | 'signal'>, ownNetns: Where, started: ChildProcess[]): Promise<ExecResult> {
  // The system interpreter, never a PATH shim (pyenv's spawns hundreds of processes first on a busy machine).
  const [first = 'python3', ...rest] = request.argv;
  const file = first === 'python3' ? '/usr/bin/python3' : first;
  // Nothing here makes a network call: the program only sleeps.
  const child =
    ownNetns === false
      ? spawn(file, rest, { stdio: 'ignore' })
      : ownNetns === true
        ? spawn('unshare', ['--net', '--', file, ...rest], { stdio: 'ignore' })
        : spawn('nsenter', [`--net=${ownNetns.netnsPath}`, '--', file, ...rest], { stdio: 'ignore' });
  started.push(child);
  request.signal.addEventListener('abort', () => child.kill('SIGKILL'), { once: true });
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ exitCode: code, signal, timedOut: false, oomKilled: false, outputTruncated: false })),
  );
}

function envRunning(ownNetns: Where, started: ChildProcess[], withPids = true): Environment {
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
    const inHost = await boxPlacement(envRunning(false, started), undefined);
    expect(inHost?.inHost.length).toBe(1);
    expect(placementRefusal(inHost)).toMatch(/^not run, for safety: .* ran in the host's own network namespace \(net:\[\d+\]\)/);
    expect(await boxPlacement(envRunning(false, started, false), undefined)).toBeUndefined();
    for (const c of started) c.kill('SIGKILL');
  }, 30_000);

  it.runIf(root)(
    'a box in a namespace of its own passes only when every link there leads into the lab: lo, a veth to the lab; not a veth elsewhere',
    async () => {
      const id = randomBytes(3).toString('hex');
      const ns = { lab: `sc-plc-${id}-lab`, box: `sc-plc-${id}-box`, other: `sc-plc-${id}-oth` };
      const started: ChildProcess[] = [];
      for (const name of Object.values(ns)) await execa('ip', ['netns', 'add', name]);
      try {
        const labPath = `/run/netns/${ns.lab}`;
        const place = (where: Where) => boxPlacement(envRunning(where, started), labPath);
        // Only lo: its packets go nowhere.
        const alone = await place(true);
        expect(alone?.inHost).toEqual([]);
        expect(alone?.others.map((o) => [o.contained, o.open])).toEqual([[['lo (loopback)'], []]]);
        expect(placementRefusal(alone)).toBeUndefined();
        // The lab's own namespace: nothing else to read.
        const inLab = await place({ netnsPath: labPath });
        expect(inLab?.others).toEqual([]);
        expect(placementRefusal(inLab)).toBeUndefined();
        expect(placementLine(inLab!)).toContain("(the lab's)");
        // A veth whose other end is in the lab (how a daemon inside the lab wires its containers).
        await execa('ip', ['-n', ns.box, 'link', 'add', `scp${id}b`, 'type', 'veth', 'peer', 'name', `scp${id}l`, 'netns', ns.lab]);
        const wired = await place({ netnsPath: `/run/netns/${ns.box}` });
        expect(wired?.others[0]?.open).toEqual([]);
        expect(wired?.others[0]?.contained).toContain(`scp${id}b (veth, other end in the lab ${ns.lab})`);
        expect(placementRefusal(wired)).toBeUndefined();
        expect(placementLine(wired!)).toContain(`scp${id}b (veth, other end in the lab ${ns.lab})`);
        // One more veth, to a namespace that is not the lab (a stand-in for one routed to the real network): refused.
        await execa('ip', ['-n', ns.box, 'link', 'add', `scp${id}o`, 'type', 'veth', 'peer', 'name', `scp${id}x`, 'netns', ns.other]);
        const open = await place({ netnsPath: `/run/netns/${ns.box}` });
        expect(open?.inHost).toEqual([]);
        expect(open?.others[0]?.open).toEqual([`scp${id}o (veth, other end in nsid 1, named ${ns.other}, not the lab)`]);
        expect(placementRefusal(open)).toMatch(
          new RegExp(
            `^not run, for safety: the box's program ran in a network namespace of its own \\(net:\\[\\d+\\]\\) that may lead to a network other than the run's lab: it has scp${id}o \\(veth`,
          ),
        );
      } finally {
        for (const c of started) c.kill('SIGKILL');
        for (const name of Object.values(ns)) await execa('ip', ['netns', 'del', name], { reject: false });
      }
    },
    60_000,
  );

  /**
   * Runs network probes through the runner on a fake whose placement program runs for real: at `where`, or in each
   * environment at the next place of the list ('hidden': in a namespace of its own, its pid never named to the host).
   */
  async function runWithPlacement(
    where: Where | (Where | 'hidden')[],
    labPath: string,
    probes = [metadataIpv4],
  ): Promise<{ verdicts: string[]; payloads: string[] }> {
    const started: ChildProcess[] = [];
    const hidden: ChildProcess[] = [];
    const payloads: string[] = [];
    const script = ({ args }: FakeExecInput) => {
      payloads.push(args.probe);
      return { exitCode: 0 };
    };
    const backend = new FakeBackend(script, undefined, () => started.flatMap((c) => (c.pid === undefined ? [] : [c.pid])));
    const create = backend.create.bind(backend);
    let envs = 0;
    backend.create = async (policy, ctx) => {
      const env = await create(policy, ctx);
      const scripted = env.exec.bind(env);
      const at = Array.isArray(where) ? (where[envs++] ?? true) : where;
      env.exec = (request) =>
        String(request.argv[3] ?? '').startsWith('sandcheck-placement-')
          ? at === 'hidden'
            ? realProgram(request, true, hidden)
            : realProgram(request, at, started)
          : scripted(request);
      return env;
    };
    const base = await openRunContext('rtestplace');
    // A lab the fake never enters: no payload may run to need it.
    const run: RunContext = {
      ...base,
      lab: { netnsPath: labPath, resolvConfPath: '/nonexistent' },
      labTraffic: async () => ({ events: [], packets: [], witness: { saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] } }),
      proveLabWitness: async () => ({ marker: 'x', sentMs: 0, doneMs: 0, ok: true, notes: [] }),
    };
    try {
      const { security } = await new Runner({ backend, policy: FAST_POLICY, probes, run, graceMs: 300 }).run();
      return { verdicts: security.map((r) => `${r.id}: ${r.verdict}: ${r.harnessError?.code}`), payloads };
    } finally {
      await base.dispose();
      for (const c of [...started, ...hidden]) c.kill('SIGKILL');
    }
  }

  it('a run with a lab whose backend puts its box in the host namespace never executes a network payload', async () => {
    // The fake runs the harness's own placement program for real (it sleeps, in the host's namespace), and nothing else.
    const { verdicts, payloads } = await runWithPlacement(false, '/run/netns/sc-rtestplace');
    expect(verdicts).toEqual(['metadata-ipv4: inconclusive: UNSAFE_NETWORK']);
    expect(payloads).toEqual([]);
  }, 30_000);

  it.runIf(root)(
    'nor one whose box has a namespace of its own wired to a network that is not the lab; a box wired only into the lab runs',
    async () => {
      const id = randomBytes(3).toString('hex');
      const ns = { lab: `sc-plr-${id}-lab`, box: `sc-plr-${id}-box`, other: `sc-plr-${id}-oth` };
      for (const name of Object.values(ns)) await execa('ip', ['netns', 'add', name]);
      try {
        await execa('ip', ['-n', ns.box, 'link', 'add', `scr${id}b`, 'type', 'veth', 'peer', 'name', `scr${id}l`, 'netns', ns.lab]);
        const wired = await runWithPlacement({ netnsPath: `/run/netns/${ns.box}` }, `/run/netns/${ns.lab}`);
        expect(wired.payloads).toEqual(['metadata-ipv4']);
        await execa('ip', ['-n', ns.box, 'link', 'add', `scr${id}o`, 'type', 'veth', 'peer', 'name', `scr${id}x`, 'netns', ns.other]);
        const open = await runWithPlacement({ netnsPath: `/run/netns/${ns.box}` }, `/run/netns/${ns.lab}`);
        expect(open.verdicts).toEqual(['metadata-ipv4: inconclusive: UNSAFE_NETWORK']);
        expect(open.payloads).toEqual([]);
      } finally {
        for (const name of Object.values(ns)) await execa('ip', ['netns', 'del', name], { reject: false });
      }
    },
    60_000,
  );

  it.runIf(root)(
    "each network probe's own box is checked: a later box wired elsewhere, or one whose program the host cannot see, runs no payload",
    async () => {
      const id = randomBytes(3).toString('hex');
      const ns = { lab: `sc-plp-${id}-lab`, box: `sc-plp-${id}-box`, other: `sc-plp-${id}-oth` };
      for (const name of Object.values(ns)) await execa('ip', ['netns', 'add', name]);
      try {
        const lab = `/run/netns/${ns.lab}`;
        await execa('ip', ['-n', ns.other, 'link', 'add', `scq${id}o`, 'type', 'veth', 'peer', 'name', `scq${id}x`, 'netns', ns.box]);
        // A pool, in the order the runner makes boxes (the first probe's, the run's own first check's, then one per probe):
        // the third is wired to a namespace that is not the lab, the others only have lo.
        const pool = await runWithPlacement([true, true, { netnsPath: `/run/netns/${ns.other}` }, true], lab, [metadataIpv4, metadataIpv6, publicEgressIpv4]);
        const refused = pool.verdicts.filter((v) => v.endsWith(': inconclusive: UNSAFE_NETWORK')).map((v) => v.split(':')[0]);
        expect(refused.length, pool.verdicts.join('; ')).toBe(1);
        // The other two ran their payloads (the fake prints no proof: inconclusive, with no harness error); the refused one never did.
        expect(pool.verdicts.filter((v) => v.endsWith(': inconclusive: undefined')).length).toBe(2);
        expect(pool.payloads.sort()).toEqual(['metadata-ipv4', 'metadata-ipv6', 'public-egress-ipv4'].filter((p) => p !== refused[0]));
        // The host saw the first box's program, not the second's: refused as well.
        const unseen = await runWithPlacement([true, true, 'hidden'], lab, [metadataIpv4, metadataIpv6]);
        const unseenRefused = unseen.verdicts.filter((v) => v.endsWith(': inconclusive: UNSAFE_NETWORK')).map((v) => v.split(':')[0]);
        expect(unseenRefused.length, unseen.verdicts.join('; ')).toBe(1);
        expect(unseen.payloads).toEqual(['metadata-ipv4', 'metadata-ipv6'].filter((p) => p !== unseenRefused[0]));
      } finally {
        for (const name of Object.values(ns)) await execa('ip', ['netns', 'del', name], { reject: false });
      }
    },
    90_000,
  );
});
