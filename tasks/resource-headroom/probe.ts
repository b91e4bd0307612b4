import { inside, outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext } from '../../model/probe.js';
import { parseJson } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

const MiB = 2 ** 20;
/** Python itself needs some room: the payload holds 80% of the limit minus this. */
const INTERPRETER_MIB = 24;

const holdMiB = (ctx: ProbeContext): number => Math.floor(ctx.policy.resources.memoryMb * 0.8 - INTERPRETER_MIB);
const holdSeconds = (ctx: ProbeContext): number => ctx.policy.resources.wallSeconds * 0.5;

/** Memory peak seen from outside: the cgroup's counter, else the host's VmHWM of the box's processes. */
function measuredPeak(obs: Observation): { bytes: number; where: string } | undefined {
  const cgroup = obs.exec.resources?.memoryPeakBytes;
  if (cgroup !== undefined && cgroup > 0) return { bytes: cgroup, where: `cgroup:${obs.exec.resources?.source ?? 'memory peak'}` };
  const rss = Math.max(0, ...(obs.exec.hostProcesses ?? []).map((p) => p.peakRssBytes ?? 0));
  return rss > 0 ? { bytes: rss, where: 'host:/proc/<pid>/status VmHWM' } : undefined;
}

/**
 * Both halves of the promise, measured outside: the box let the program hold ~80% of the memory limit
 * and run for 50% of the wall limit, and it ended by itself (the loop's run gate). The payload's own
 * report is inside evidence only.
 */
function headroomPredicate(obs: Observation, ctx: ProbeContext): PredicateResult {
  const wantBytes = holdMiB(ctx) * MiB;
  const wantMs = holdSeconds(ctx) * 1000;
  const peak = measuredPeak(obs);
  const claimed = parseJson(obs, 'result.json');
  const evidence = [
    outside('harness-clock', `ran ${Math.round(obs.exec.wallMs)} ms; the case holds ${wantMs} ms`),
    ...(peak
      ? [
          outside(
            'memory-peak',
            `peak ${Math.round(peak.bytes / MiB)} MiB; the case holds ${holdMiB(ctx)} MiB of a ${ctx.policy.resources.memoryMb} MiB limit`,
            peak.where,
          ),
        ]
      : []),
    ...(typeof claimed === 'string' ? [] : [inside('payload-report', `result.json says ${JSON.stringify(claimed.value)}`, 'artifact:result.json')]),
  ];
  if (!peak)
    return {
      accepted: false,
      reason: 'no memory peak measured from outside (no cgroup counter, no host process sample): the memory half is unverified',
      evidence,
    };
  if (peak.bytes < wantBytes)
    return {
      accepted: false,
      reason: `memory peak ${Math.round(peak.bytes / MiB)} MiB < the ${holdMiB(ctx)} MiB the case must hold: it did not use the headroom`,
      evidence,
    };
  if (obs.exec.wallMs < wantMs)
    return { accepted: false, reason: `ran ${Math.round(obs.exec.wallMs)} ms by the harness clock < the ${wantMs} ms the case must run`, evidence };
  return { accepted: true, reason: `held ${Math.round(peak.bytes / MiB)} MiB (measured) for ${Math.round(obs.exec.wallMs)} ms and ended by itself`, evidence };
}

export const resourceHeadroom: TaskCaseSpec = {
  kind: 'task',
  id: 'resource-headroom',
  title: 'uses up to 80% of the memory limit and 50% of the wall limit',
  policyItem: 'resources.memoryMb',
  payload: 'tasks/resource-headroom',
  runsToWall: true,
  expected: 'accept',
  sampleProcesses: true,
  readsCgroup: true,
  args: (ctx) => ({ memoryBytes: holdMiB(ctx) * MiB, seconds: holdSeconds(ctx) }),
  artifacts: ['result.json'],
  predicate: headroomPredicate,
};
