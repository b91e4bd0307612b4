import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { SecurityScorecard } from '../../model/scorecard.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const isRoot = process.getuid?.() === 0;

/**
 * What bwrap claims on a root CI host with cgroups, written out (not computed from the backend's own
 * capability code): with cgroups gone these claims disappear and the test fails, instead of passing
 * on a card of not-applicable results.
 */
const BWRAP_CLAIMS = [
  'files.hostPaths',
  'files.readOnlyInput',
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
];

/** A claimed item must be held; only an item the backend does not claim may be not-applicable (with its reason). */
function againstClaims(card: SecurityScorecard): string[] {
  const claimed = new Set(card.backend.enforces);
  return card.results.flatMap((r) => {
    // A claimed item is held, or not-applicable only where this machine cannot test it (a cause outside the box).
    if (claimed.has(r.policyItem))
      return r.verdict === 'held' || (r.verdict === 'not-applicable' && /on this machine/.test(r.reason))
        ? []
        : [`${r.id}: claims ${r.policyItem} but ${r.verdict}: ${r.reason}`];
    return r.verdict === 'not-applicable' && r.reason.length > 10 ? [] : [`${r.id}: ${r.policyItem} not claimed, yet ${r.verdict}: ${r.reason}`];
  });
}

describe.skipIf(!isRoot)('sandcheck run against bwrap, the default backend (root, as in CI)', () => {
  it('without --backend it picks bwrap; under ci it claims every limit, holds every claimed item, and every task verdict is as expected', async () => {
    const out = await tempOut();
    const res = await sandcheck(['run', '--policy', 'ci', '--concurrency', '3', '--out', out]);
    const { security, task } = await readCards(out);
    expect(security.backend.name).toBe('bwrap');
    expect([...security.backend.enforces].sort()).toEqual(expect.arrayContaining(BWRAP_CLAIMS));
    expect(againstClaims(security)).toEqual([]);
    expect(security.summary).toMatchObject({ crossed: 0, unenforced: 0, inconclusive: 0 });
    expect(task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(res.exitCode, res.all).toBe(0);
    // Each limit held by its own control, seen from outside: the cgroup's counters and the backend's clock.
    const byId = new Map(security.results.map((r) => [r.id, r]));
    expect(byId.get('memory-bomb')?.observation?.resources?.oomKills).toBeGreaterThan(0);
    expect(byId.get('fork-bomb')?.observation?.resources?.pidsPeak).toBeLessThanOrEqual(security.policy.resources.processes);
    expect(byId.get('wall-clock-spin')?.observation).toMatchObject({ killedBy: 'none', backendReport: { timedOut: true } });
  }, 300_000);

  it('under the reference policy too (30 s wall)', async () => {
    const out = await tempOut();
    const res = await sandcheck(['run', '--backend', 'bwrap', '--policy', 'reference', '--concurrency', '4', '--out', out]);
    const { security, task } = await readCards(out);
    expect(againstClaims(security)).toEqual([]);
    expect(task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(res.exitCode, res.all).toBe(0);
  }, 400_000);

  it('SIGINT during network probes removes the lab: no namespace, decoy server or tcpdump of the run survives', async () => {
    const out = await tempOut();
    const child = sandcheck(['run', '--backend', 'process', '--policy', 'reference', '--only', 'metadata-ipv4', 'wall-clock-sleep', '--out', out]);
    let seen = '';
    child.stderr?.on('data', (c: Buffer) => (seen += c.toString()));
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (seen.includes('[1/2]')) {
          clearInterval(t);
          resolve();
        }
      }, 50);
    });
    const runId = /sandcheck run (r[0-9a-f]+)/.exec(seen)?.[1] ?? 'none';
    expect((await execa('ip', ['netns', 'list'])).stdout).toContain(`sc-${runId}`);
    child.kill('SIGINT');
    const res = await child;
    expect(res.exitCode).toBe(130);
    expect((await execa('ip', ['netns', 'list'])).stdout).not.toContain(`sc-${runId}`);
    expect(await findProcessesWithCmdline(`sc-${runId}`)).toEqual([]);
    expect(await findProcessesWithCmdline(`sandcheck-lab-${runId}`)).toEqual([]);
    const { security } = await readCards(out);
    expect(security.run.interrupted).toBe(true);
  });
});
