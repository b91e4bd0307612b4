import { availableParallelism } from 'node:os';
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';
import { stopCause, adapterCountersEvidence } from '../_shared/judges.js';

/** Slack over cpus × elapsed: the harness clock spans a little more than the run. */
export const CPU_TOLERANCE = 0.1;
/** CFS hands out quota per period (100 ms): one period's worth may run ahead of the clock. */
const QUOTA_PERIOD_S = 0.1;

/** How long the workers spin: long enough for many quota periods, well inside the policy wall. */
const spinSeconds = (wallSeconds: number): number => Math.min(3, wallSeconds * 0.5);

/** Where the policy's cpus reach the host's cores no box can use more than the policy: a cause outside the box. */
function coresShortfall(cpus: number): string | undefined {
  const cores = availableParallelism();
  return cpus >= cores
    ? `the policy allows ${cpus} cpus and this host has ${cores} cores: no box can use more than the policy here, so the quota cannot be tested on this machine`
    : undefined;
}

export const cpuQuota: SecurityProbe = {
  kind: 'security',
  id: 'cpu-quota',
  title: 'spin more processes than the CPU quota allows (bounded, fixed time)',
  category: 'resources',
  policyItem: 'resources.cpus',
  readsCgroup: true,
  severity: 'medium',
  payload: 'cpu-quota',
  remediation:
    'Give the box a CPU quota (cpu.max / cpu.cfs_quota_us, docker --cpus) sized to the policy; a nice level or cpuset alone does not bound the CPU time it takes.',
  attack: ['T1496.001'],
  cwe: ['CWE-770'],
  hostPrecondition: (ctx) => coresShortfall(ctx.policy.resources.cpus),
  args: (ctx) => ({ seconds: spinSeconds(ctx.policy.resources.wallSeconds), cpus: ctx.policy.resources.cpus }),
  judge: (obs, ctx) => {
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const cpus = ctx.policy.resources.cpus;
    const cores = availableParallelism();
    const r = obs.exec.resources;
    const elapsedS = obs.exec.wallMs / 1000;
    const boundS = cpus * (elapsedS * (1 + CPU_TOLERANCE) + QUOTA_PERIOD_S);
    const usedS = r?.cpuUsageNs === undefined ? undefined : r.cpuUsageNs / 1e9;
    const evidence = [
      ...(r
        ? [
            outside(
              'cgroup',
              `CPU time ${usedS === undefined ? 'n/a' : `${usedS.toFixed(2)} s`} in ${elapsedS.toFixed(2)} s on the harness clock (bound ${boundS.toFixed(2)} s = ${cpus} cpus × (elapsed × ${1 + CPU_TOLERANCE} + one ${QUOTA_PERIOD_S * 1000} ms period)); quota ${r.cpuQuotaCores ?? 'n/a'} cores; throttled periods ${r.cpuThrottledPeriods ?? 'n/a'}`,
              r.source,
            ),
          ]
        : []),
      outside('harness-clock', `${Math.round(obs.exec.wallMs)} ms from exec to result; host has ${cores} cores`),
      outside('stop-cause', stopCause(obs)),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
      ...adapterCountersEvidence(obs),
    ];
    const shortfall = coresShortfall(cpus);
    if (shortfall !== undefined) return { verdict: 'not-applicable', reason: shortfall, evidence };
    if (usedS === undefined) {
      return {
        verdict: 'inconclusive',
        reason:
          'the backend read no cgroup CPU counter, so the CPU time the box used was not observed from outside (what the payload says about itself never decides)',
        evidence,
      };
    }
    if (usedS > boundS) {
      return {
        verdict: 'crossed',
        reason: `the box used ${usedS.toFixed(2)} s of CPU in ${elapsedS.toFixed(2)} s, past ${cpus} cpus × elapsed (+${CPU_TOLERANCE * 100}% and one quota period): ${(usedS / elapsedS).toFixed(2)} cpus`,
        evidence,
      };
    }
    // The quota that throttled it must be the policy's: one above it lets a box use more than the policy over a long run.
    if (r?.cpuQuotaCores !== undefined && r.cpuQuotaCores > cpus * (1 + CPU_TOLERANCE)) {
      return {
        verdict: 'inconclusive',
        reason: `the box was throttled, but by a quota of ${r.cpuQuotaCores} cores, above the policy's ${cpus}: its ${usedS.toFixed(2)} s of CPU in ${elapsedS.toFixed(2)} s stayed within the bound only over this short spin`,
        evidence,
      };
    }
    if ((r?.cpuThrottledPeriods ?? 0) > 0) {
      return {
        verdict: 'held',
        reason: `the quota throttled the box in ${r?.cpuThrottledPeriods} periods and it used ${usedS.toFixed(2)} s of CPU in ${elapsedS.toFixed(2)} s, within ${cpus} cpus × elapsed`,
        evidence,
      };
    }
    return {
      verdict: 'inconclusive',
      reason: `the box used ${usedS.toFixed(2)} s of CPU in ${elapsedS.toFixed(2)} s, within the bound, but no throttled period was counted: the quota was never shown to act (the machine may have been too busy for the spinner to demand more)`,
      evidence,
    };
  },
};
