import { FakeBackend, fakeMarkers, type FakeScript } from '../../backends/fake/fake-backend.js';
import type { Capabilities } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { ProbeSpec } from '../../model/probe.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';

/** A fast policy for unit tests: a 0.4 s wall so deadline paths take under a second. */
export const FAST_POLICY: Policy = { ...CI_POLICY, name: 'unit', resources: { ...CI_POLICY.resources, wallSeconds: 0.4 } };

export async function runFake(
  probes: ProbeSpec[],
  script: FakeScript,
  opts: {
    caps?: Capabilities;
    policy?: Policy;
    graceMs?: number;
    concurrency?: number;
    hostPids?: () => number[];
    claimedCounters?: boolean;
    trustClaims?: boolean;
  } = {},
) {
  const run = await openRunContext('rtest0');
  const backend = new FakeBackend(script, opts.caps, opts.hostPids, opts.claimedCounters ? 'claimed' : 'own');
  try {
    const runner = new Runner({
      backend,
      policy: opts.policy ?? FAST_POLICY,
      probes,
      run,
      graceMs: opts.graceMs ?? 300,
      ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
      ...(opts.trustClaims ? { trustClaims: true } : {}),
    });
    return { ...(await runner.run()), backend, canaries: run.canaries };
  } finally {
    await run.dispose();
  }
}

export { fakeMarkers };
