import { describe, expect, it } from 'vitest';
import { scrubHostPaths } from '../../harness/scrub.js';

describe('scrubHostPaths', () => {
  it('removes the run scratch dir and sandcheck state paths from every string, keeping the rest', () => {
    const scratch = '/tmp/sandcheck-rabc-XyZ123';
    const r = scrubHostPaths(
      {
        reason: `a symlink to "${scratch}/decoy-home/.aws/credentials"`,
        evidence: [{ detail: 'read /run/sandcheck/bwrap/rabc-1/fs/work/result.txt, then /var/lib/sandcheck/lab-docker/rabc/x' }],
        n: 3,
        keep: '/tmp/evil-absolute-1.txt',
      },
      scratch,
    );
    expect(r.reason).toBe('a symlink to "<run-scratch>/decoy-home/.aws/credentials"');
    expect(r.evidence[0]?.detail).toBe('read <sandcheck-state>, then <sandcheck-state>');
    expect(r.n).toBe(3);
    expect(r.keep).toBe('/tmp/evil-absolute-1.txt');
  });
});
