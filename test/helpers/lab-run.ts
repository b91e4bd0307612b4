import type { Backend } from '../../model/backend-contract.js';
import type { Policy } from '../../model/policy.js';
import type { ProbeSpec } from '../../model/probe.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab } from '../../lab/lab-session.js';

/** Runs probes against a backend inside a fresh lab of their own, and tears everything down. */
export async function runInLab(runId: string, backend: Backend, policy: Policy, probes: readonly ProbeSpec[]) {
  const lab = await openLab(runId, packageRoot());
  try {
    const run = await openRunContext(runId, { lab });
    try {
      return await new Runner({ backend, policy, probes, run, concurrency: 2 }).run();
    } finally {
      await run.dispose();
    }
  } finally {
    await lab.close();
  }
}
