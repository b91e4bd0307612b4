import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { probeLabSupport } from '../../lab/lab-session.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { runInLab } from '../helpers/lab-run.js';

const leaker = (how: string): SecurityProbe => ({
  ...secretDecoyEnv,
  id: `leak-${how}`,
  payload: join(packageRoot(), 'test', 'fixtures', 'payloads', 'leaker'),
  args: () => ({ how }),
});

const LOCAL = ['base64', 'hex', 'reversed', 'lower', 'utf16', 'url', 'split-lines', 'split-channels', 'workspace-file'];

describe('a canary in disguise is still found, in every channel (process control)', () => {
  it('encoded, reversed, re-cased, split over lines or across stdout and stderr, or written to a workspace file: crossed', async () => {
    const run = await openRunContext('rleak1');
    try {
      const { security } = await new Runner({ backend: new ProcessBackend(), policy: CI_POLICY, probes: LOCAL.map(leaker), run, concurrency: 3 }).run();
      const verdicts = security.map((r) => [r.id, r.verdict, r.evidence.find((e) => e.witness === 'canary-scan')?.where ?? r.reason]);
      expect(verdicts.filter(([, v]) => v !== 'crossed')).toEqual([]);
      const where = Object.fromEntries(verdicts.map(([id, , w]) => [id, w]));
      expect(where['leak-base64']).toMatch(/base64/);
      expect(where['leak-split-channels']).toMatch(/stdout\+stderr joined/);
      expect(where['leak-workspace-file']).toMatch(/^workspace:notes.txt \(base32/);
    } finally {
      await run.dispose();
    }
  }, 120_000);

  it('sent to a lab decoy in an HTTP body (base64) or a UDP datagram (reversed): crossed, each by its own channel, with the decoy as witness', async (t) => {
    const support = await probeLabSupport();
    if (!support.available) t.skip(`no lab here: ${support.reason}`);
    const { security } = await runInLab('rleak2', new ProcessBackend(), CI_POLICY, [leaker('http-body'), leaker('udp')]);
    // The two run side by side, and a decoy's log is shared: each must be caught by what it sent itself.
    const channel: Record<string, RegExp> = {
      'leak-http-body': /^decoy:http body 203\.0\.113\.10:80 \(base64/,
      'leak-udp': /^decoy:udp datagram \S+:123 \(reversed/,
    };
    expect(security.map((r) => r.id).sort()).toEqual(Object.keys(channel));
    for (const r of security) {
      expect(r.verdict, `${r.id}: ${r.reason}`).toBe('crossed');
      const where = r.evidence.filter((e) => e.witness === 'canary-scan').map((e) => e.where ?? '');
      expect(
        where.some((w) => channel[r.id]?.test(w)),
        `${r.id}: ${where.join(' | ')}`,
      ).toBe(true);
    }
  }, 120_000);
});
