import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { SecurityScorecard } from '../../harness/model/scorecard.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const isRoot = process.getuid?.() === 0;


const notHeld = (card: SecurityScorecard) =>
  card.results.filter((r) => r.verdict !== 'held' && r.verdict !== 'not-applicable').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);

describe.skipIf(!isRoot)('sandcheck run against bwrap, the default backend (root, as in CI)', () => {
  it('without --backend it picks bwrap; under ci every probe is held or not-applicable with a reason, and every task verdict is as expected', async () => {
    const out = await tempOut();
    const res = await sandcheck(['run', '--policy', 'ci', '--concurrency', '3', '--out', out]);
    const { security, task } = await readCards(out);
    expect(security.backend.name).toBe('bwrap');
    expect(notHeld(security)).toEqual([]);
    for (const r of security.results.filter((x) => x.verdict === 'not-applicable')) expect(r.reason.length, r.id).toBeGreaterThan(10);
    expect(task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(res.exitCode, res.all).toBe(0);
    // Limits come with cgroup evidence read from outside.
    const memory = security.results.find((r) => r.id === 'memory-bomb');
    expect(memory?.observation?.resources?.oomKills).toBeGreaterThan(0);
  });

  it('under the reference policy too (30 s wall)', async () => {
    const out = await tempOut();
    const res = await sandcheck(['run', '--backend', 'bwrap', '--policy', 'reference', '--concurrency', '4', '--out', out]);
    const { security, task } = await readCards(out);
    expect(notHeld(security)).toEqual([]);
    expect(task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(res.exitCode, res.all).toBe(0);
  });

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
