import { execa, type ResultPromise } from 'execa';
import { describe, expect, it } from 'vitest';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const skip = await bwrapSkipReason();

/** A busy loop that stops itself after `seconds` whatever happens (and is killed by the test before). */
function cpuHog(seconds: number): ResultPromise {
  return execa('python3', ['-c', `import time\nend = time.monotonic() + ${seconds}\nwhile time.monotonic() < end: pass`], { reject: false });
}

describe.skipIf(skip !== undefined)(`verdicts do not change with machine load${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('the bwrap security suite at the default schedule and at -j 1, with two CPU hogs running on the machine: identical verdicts', async () => {
    const hogs = [cpuHog(900), cpuHog(900)];
    try {
      const verdicts: Record<string, string>[] = [];
      for (const jobs of [[], ['--concurrency', '1']]) {
        const out = await tempOut();
        const run = await sandcheck(['run', '--backend', 'bwrap', '--policy', 'ci', ...jobs, '--out', out, '--only', ...securitySuite.map((p) => p.id)]);
        expect([0, 1, 2], run.all).toContain(run.exitCode);
        const { security } = await readCards(out);
        verdicts.push(
          Object.fromEntries(
            security.results.map((r) => [r.id, `${r.verdict}${r.verdict === 'held' || r.verdict === 'not-applicable' ? '' : `: ${r.reason}`}`]),
          ),
        );
      }
      expect(verdicts[1]).toEqual(verdicts[0]);
      // And what they are: hardened bwrap holds everything it claims, under load too.
      const notHeld = Object.entries(verdicts[0] ?? {}).filter(([, v]) => v !== 'held' && v !== 'not-applicable');
      expect(notHeld).toEqual([]);
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
      await Promise.all(hogs);
    }
  }, 900_000);
});
