import type { Policy } from '../model/policy.js';
import type { ProbeSpec } from '../model/probe.js';

/** Whether a probe keeps a core busy while it runs ('cpu') or mostly sleeps and holds while the host watches ('wait'). */
export type ProbeLoad = 'cpu' | 'wait';

/**
 * Expected milliseconds of one probe under a policy: a fixed cost per environment, the whole wall limit for
 * programs that run until stopped, the identity probes' hold, a second environment for two-phase and
 * companion probes. Only the order of the schedule and the balance of the shards depend on it, never a verdict.
 */
export function expectedMs(probe: ProbeSpec, policy: Policy): number {
  const wallMs = policy.resources.wallSeconds * 1000;
  let ms = 400;
  if (probe.runsToWall) ms += wallMs;
  if (probe.sampleProcesses) ms += 2000;
  if (probe.watchSurvivor) ms += 1500;
  if (isNetworkProbe(probe)) ms += 600;
  if (probe.kind === 'security' && probe.companion) ms += 700;
  if (probe.followUp) ms *= 2;
  if (probe.kind === 'task' && probe.attempts) ms *= probe.attempts.length;
  return ms;
}

/** A probe's own word, else: a box held open for the host's sampling, or a network probe (it waits on its lock and the lab), waits. */
export function probeLoad(probe: ProbeSpec): ProbeLoad {
  if (probe.load) return probe.load;
  return probe.sampleProcesses || isNetworkProbe(probe) ? 'wait' : 'cpu';
}

export function isNetworkProbe(probe: ProbeSpec): boolean {
  return probe.kind === 'security' && probe.category === 'network';
}
