import { describe, expect, it } from 'vitest';
import { fakeMarkers, type FakeExecInput } from '../../backends/fake/fake-backend.js';
import { decoyProcessEnviron } from '../../probes/decoy-process-environ/probe.js';
import { ptraceHostDecoy } from '../../probes/ptrace-host-decoy/probe.js';
import { CONTROL_ENV } from '../../lab/proof.js';
import { runFake } from '../helpers/fake-run.js';

/** What the payload prints on a hardened box: its own control (from its environment) read back, nothing of the decoy's. */
function honest({ files, request }: FakeExecInput): string {
  const m = fakeMarkers({ files });
  return `${m.start}environ of self: ${request.env?.[CONTROL_ENV] ?? ''}\n${m.done}`;
}

describe('a host decoy process that is gone earns no held', () => {
  it('the same honest output is held while the decoy runs, and inconclusive once it died before the box finished', async () => {
    const alive = await runFake([decoyProcessEnviron, ptraceHostDecoy], (input) => ({ stdout: honest(input), exitCode: 0 }));
    expect(alive.security.map((r) => `${r.id}: ${r.verdict}`)).toEqual(['decoy-process-environ: held', 'ptrace-host-decoy: held']);

    // The decoy dies while the box runs (a crash, its own ceiling): nothing of the host's was there to reach.
    const dead = await runFake([decoyProcessEnviron, ptraceHostDecoy], (input) => {
      // Both probes share one decoy: the second may find it already gone.
      try {
        process.kill(Number(input.args['pid']), 'SIGKILL');
      } catch {
        // ESRCH: already dead, which is the point.
      }
      return { stdout: honest(input), exitCode: 0, delayMs: 100 };
    });
    for (const r of dead.security) {
      expect(`${r.id}: ${r.verdict}: ${r.reason}`).toMatch(/^[a-z-]+: inconclusive: the host decoy process \(pid \d+\) (exited|is no longer running)/);
      expect(r.evidence[0]?.source).toBe('outside');
    }
  }, 60_000);
});
