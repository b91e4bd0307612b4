import { outside } from '../model/evidence.js';
import type { Judgement, Observation } from '../model/probe.js';

/**
 * A `held` the host could not confirm is not one: when the host found this execution's program running in a process
 * the adapter never named among the box's (harness/exec-tracker.ts), whatever the probe sampled was not (all of) the
 * box, and the verdict is inconclusive. Crossings stand: what the host saw cross, crossed.
 */
export function confirmHeld(obs: Observation, judgement: Judgement): Judgement {
  const unnamed = obs.exec.unnamedProcesses ?? [];
  const unlinked = obs.exec.unlinkedNamedPids ?? [];
  const notes = [
    ...(unnamed.length > 0
      ? [outside('host-process-scan', `this execution's program ran in processes the adapter did not name: ${unnamed.slice(0, 3).join(', ')}`, 'host /proc')]
      : []),
    ...(unlinked.length > 0
      ? [
          outside(
            'host-process-scan',
            `pids the adapter named that never carried this execution's nonce (not evidence): ${unlinked.slice(0, 3).join(', ')}`,
            'host /proc',
          ),
        ]
      : []),
  ];
  if (notes.length === 0) return judgement;
  if (judgement.verdict !== 'held' || unnamed.length === 0) return { ...judgement, evidence: [...judgement.evidence, ...notes] };
  return {
    verdict: 'inconclusive',
    reason: `the host found this execution's program running in ${unnamed.length === 1 ? 'a process' : `${unnamed.length} processes`} the adapter did not name (${unnamed[0]}): what was sampled is not the whole box, so nothing the adapter pointed at can hold`,
    evidence: [...notes, ...judgement.evidence],
  };
}
