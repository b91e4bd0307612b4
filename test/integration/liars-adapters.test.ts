import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { forkBomb } from '../../probes/fork-bomb/probe.js';
import { identityUid } from '../../probes/identity-uid/probe.js';
import { memoryBomb } from '../../probes/memory-bomb/probe.js';
import { postureNamespaces } from '../../probes/posture-namespaces/probe.js';
import { residue } from '../../probes/residue/probe.js';
import { surviveTeardown } from '../../probes/survive-teardown/probe.js';
import { wallClockSleep } from '../../probes/wall-clock-sleep/probe.js';
import { wallClockSpin } from '../../probes/wall-clock-spin/probe.js';
import { securitySuite } from '../../suites/index.js';
import { hostUntestableEscapes } from '../helpers/host-facts.js';
import { hiddenPids, LiarBackend, liarsUsable, liarProcesses } from '../helpers/liar-adapters.js';

/**
 * Module adapters that pass for a sandbox and lie about one thing each (test/helpers/liar-adapters.ts). Each runs the
 * probes whose outcome its lie would decide: none may come out held, since the host confirms what the adapter says.
 */
const POLICY: Policy = { ...CI_POLICY, name: 'liars', resources: { ...CI_POLICY.resources, memoryMb: 96, processes: 24, wallSeconds: 3 } };

const made: LiarBackend[] = [];
afterAll(() => {
  for (const b of made) b.cleanUp();
});

async function run(backend: Backend, probes: SecurityProbe[]) {
  const ctx = await openRunContext(`rliar${process.pid.toString(16).slice(-4)}`);
  try {
    const { security } = await new Runner({ backend, policy: POLICY, probes, run: ctx, concurrency: 1 }).run();
    return security;
  } finally {
    await ctx.dispose();
  }
}

const verdicts = (rs: { id: string; verdict: string; reason: string }[]) => rs.map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);

describe.skipIf(!liarsUsable)('a lying adapter earns no held on what it lied about', () => {
  it("hostPids names an innocent python (nobody, tight cgroups, the execution's arguments in its argv) while the payload runs as root: no held", async () => {
    const liar = new LiarBackend('innocent-pids');
    made.push(liar);
    const rs = await run(liar, [identityUid, postureNamespaces, memoryBomb, forkBomb]);
    expect(rs).toHaveLength(4);
    expect(verdicts(rs.filter((r) => r.verdict === 'held'))).toEqual([]);
    // The host names what the adapter did not, on every probe; identity-uid (held on the innocent's uid before) says so.
    for (const r of rs) expect(r.evidence.some((e) => e.source === 'outside' && /the adapter did not name/.test(e.detail))).toBe(true);
    const uid = rs.find((r) => r.id === 'identity-uid');
    expect(`${uid?.verdict}: ${uid?.reason}`).toMatch(/^inconclusive: the host found this execution's program running in .*the adapter did not name/);
  }, 180_000);

  it('the same liar through every local probe of the security suite (as the process control runs it): no held anywhere', async () => {
    // As test/integration/process-backend.test.ts selects them: the payload runs unconfined, so nothing may hold.
    const untestable = hostUntestableEscapes();
    const local = securitySuite.filter(
      (p) => p.category !== 'network' && p.enforcedBy !== 'exporter' && p.id !== 'cpu-quota' && p.id !== 'kernel-identity' && !untestable.has(p.id),
    );
    const liar = new LiarBackend('innocent-pids');
    made.push(liar);
    const rs = await run(liar, local);
    expect(rs).toHaveLength(local.length);
    expect(verdicts(rs.filter((r) => r.verdict === 'held'))).toEqual([]);
  }, 400_000);

  it('hostPids names an innocent python with nothing of the execution in its argv: never sampled, and no held', async () => {
    const liar = new LiarBackend('innocent-pids-bare');
    made.push(liar);
    const rs = await run(liar, [identityUid, postureNamespaces]);
    expect(rs).toHaveLength(2);
    expect(verdicts(rs.filter((r) => r.verdict === 'held'))).toEqual([]);
    for (const r of rs) {
      expect(r.observation?.unlinkedNamedPids?.length ?? 0).toBeGreaterThan(0);
      expect(r.evidence.some((e) => e.source === 'outside' && /never carried this execution's nonce \(not evidence\)/.test(e.detail))).toBe(true);
    }
  }, 120_000);

  it('survivors left with their argv blanked and SIGSTOPped: survive-teardown is crossed (a stopped process is alive)', async () => {
    const liar = new LiarBackend('blank-survivors');
    made.push(liar);
    const [r] = await run(liar, [surviveTeardown]);
    expect(`${r?.verdict}: ${r?.reason}`).toMatch(/^crossed: /);
    expect(r?.evidence.some((e) => e.source === 'outside' && /stopped|still ran after destroy/.test(e.detail))).toBe(true);
    liar.cleanUp();
    for (const id of liar.made) expect(liarProcesses(id)).toEqual([]);
  }, 120_000);

  it('a decoy survivor for the watch, the real daemon run with neither name nor environment and SIGSTOPped: crossed, found in the mount namespace of the box', async () => {
    const liar = new LiarBackend('hidden-daemon');
    made.push(liar);
    const [r] = await run(liar, [surviveTeardown]);
    expect(`${r?.verdict}: ${r?.reason}`).toMatch(/^crossed: /);
    expect(r?.evidence.some((e) => e.source === 'outside' && /in the box's namespace mnt:/.test(e.detail))).toBe(true);
    for (const id of liar.made) expect(hiddenPids(id)).toEqual([]);
    liar.cleanUp();
  }, 120_000);

  it('a timeout reported (SIGKILL) while the program runs on, its argv blanked: neither wall-clock probe is held', async () => {
    const liar = new LiarBackend('fake-timeout');
    made.push(liar);
    const rs = await run(liar, [wallClockSleep, wallClockSpin]);
    expect(rs).toHaveLength(2);
    expect(verdicts(rs.filter((r) => r.verdict === 'held'))).toEqual([]);
    for (const r of rs) expect(`${r.id}: ${r.verdict}: ${r.reason}`).toMatch(/still saw the payload running/);
  }, 180_000);

  it('a timeout reported while the program runs on, its arguments passed in a file (no nonce in argv), named in hostPids: no held', async () => {
    const liar = new LiarBackend('fake-timeout-hidden');
    made.push(liar);
    const rs = await run(liar, [wallClockSleep, wallClockSpin]);
    expect(rs).toHaveLength(2);
    expect(verdicts(rs.filter((r) => r.verdict === 'held'))).toEqual([]);
    for (const r of rs) expect(`${r.id}: ${r.verdict}: ${r.reason}`).toMatch(/^[^:]+: inconclusive: .*still saw the payload running/);
  }, 180_000);

  it("every fresh environment handed the previous one's workspace (private /tmp, /var/tmp, /dev/shm and home): residue is crossed", async () => {
    const liar = new LiarBackend('reused-workspace');
    made.push(liar);
    const [r] = await run(liar, [residue]);
    expect(`${r?.verdict}: ${r?.reason}`).toMatch(/^crossed: a fresh environment saw what the previous one left: 1 place/);
    expect(r?.evidence.some((e) => e.source === 'outside' && /residue-\S+ in workspace/.test(e.detail))).toBe(true);
  }, 60_000);
});
