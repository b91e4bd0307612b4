import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Observation, SecurityProbe } from '../../model/probe.js';
import { healthEvidence, hostHarmJudgement, stopCause, adapterCountersEvidence } from '../_shared/judges.js';

const MiB = 2 ** 20;

/** The highest memory use seen from outside: the cgroup's peak, or the box processes' VmHWM. */
function observedPeak(obs: Observation): { bytes: number; where: string } | undefined {
  const cg = obs.exec.resources?.memoryPeakBytes;
  const rss = Math.max(0, ...(obs.exec.hostProcesses ?? []).map((p) => p.peakRssBytes ?? 0));
  if (cg !== undefined && cg >= rss) return { bytes: cg, where: 'cgroup' };
  if (rss > 0) return { bytes: rss, where: '/proc/<pid>/status VmHWM' };
  return cg !== undefined ? { bytes: cg, where: 'cgroup' } : undefined;
}

export const memoryBomb: SecurityProbe = {
  kind: 'security',
  id: 'memory-bomb',
  title: 'allocate up to 4× the memory limit in steps',
  category: 'resources',
  policyItem: 'resources.memoryMb',
  severity: 'high',
  payload: 'memory-bomb',
  remediation:
    'Put the box in a memory cgroup (memory.max / memory.limit_in_bytes, swap included) sized to the policy; an rlimit alone is not observable from outside.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  sampleProcesses: true,
  readsCgroup: true,
  load: 'cpu', // it must reach the limit within the wall limit
  watchHost: true,
  args: (ctx) => ({ ceilingBytes: ctx.policy.resources.memoryMb * 4 * MiB }),
  judge: (obs, ctx) => {
    const harmed = hostHarmJudgement(obs);
    if (harmed) return harmed;
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const limit = ctx.policy.resources.memoryMb * MiB;
    const peak = observedPeak(obs);
    const cause = stopCause(obs);
    const evidence = [
      ...(peak ? [outside('memory-peak', `peak ${Math.round(peak.bytes / MiB)} MiB (limit ${ctx.policy.resources.memoryMb} MiB)`, peak.where)] : []),
      ...(obs.exec.resources
        ? [
            outside(
              'cgroup',
              `failcnt ${obs.exec.resources.memoryFailcnt ?? 'n/a'}, oom_kill ${obs.exec.resources.oomKills ?? 'n/a'}`,
              obs.exec.resources.source,
            ),
          ]
        : []),
      outside('stop-cause', cause),
      exitEvidence(obs.exec),
      ...healthEvidence(obs),
      payloadReport(obs.exec),
      ...adapterCountersEvidence(obs),
    ];
    if (peak && peak.bytes > limit * 1.1)
      return {
        verdict: 'crossed',
        reason: `the box used ${Math.round(peak.bytes / MiB)} MiB, past the ${ctx.policy.resources.memoryMb} MiB limit (${cause})`,
        evidence,
      };
    if (obs.finished) return { verdict: 'crossed', reason: `the payload allocated its whole ceiling (4× the limit) and finished (${cause})`, evidence };
    if (obs.exec.killedBy !== 'none')
      return { verdict: 'inconclusive', reason: `the harness had to stop it (${cause}) before any memory limit showed`, evidence };
    if (!peak) return { verdict: 'inconclusive', reason: 'no outside measurement of memory use (no cgroup counters, no host pids to sample)', evidence };
    // Held needs the memory control itself to have acted (an OOM kill or a refused charge, counted
    // by the cgroup), with the peak near the limit: a crash at 6 MiB or an early SIGKILL is not it.
    const r = obs.exec.resources;
    const oomKilled = (r?.oomKills ?? 0) > 0;
    const acted = oomKilled || (r?.memoryFailcnt ?? 0) > 0;
    if (!oomKilled && obs.exec.wallMs >= ctx.policy.resources.wallSeconds * 900) {
      return {
        verdict: 'inconclusive',
        reason: `no OOM kill was counted and the program ran to ${Math.round(obs.exec.wallMs)} ms, near the wall limit: the wall clock, not the memory limit, stopped it (${cause})`,
        evidence,
      };
    }
    if (!acted)
      return {
        verdict: 'inconclusive',
        reason: `no OOM kill or refused allocation was counted from outside (${cause}): the memory limit was never shown to act`,
        evidence,
      };
    if (peak.bytes < limit * 0.8) {
      return {
        verdict: 'inconclusive',
        reason: `the peak was ${Math.round(peak.bytes / MiB)} MiB, below 80% of the ${ctx.policy.resources.memoryMb} MiB limit: the limit that acted is not the policy's (${cause})`,
        evidence,
      };
    }
    return {
      verdict: 'held',
      reason: `the memory cgroup stopped the allocation at ${Math.round(peak.bytes / MiB)} MiB, near the ${ctx.policy.resources.memoryMb} MiB limit (${cause})`,
      evidence,
    };
  },
};
