import { describeStop } from '../../model/evidence-lines.js';
import type { ExecObservation } from '../../model/observation.js';
import type { PredicateResult } from '../../model/probe.js';

/**
 * The run counts: a result is considered only if the program ended the way the case expects, by
 * itself (no stopper: harness deadline, output ceiling, backend timer, OOM killer) and with the
 * expected exit status. Returns the rejection, or undefined when the ending is as expected. (The
 * runner records the exit status as outside evidence.)
 */
export function runGate(exec: ExecObservation, expectedExit = 0): PredicateResult | undefined {
  const stopped =
    exec.startError !== undefined ||
    exec.killedBy !== 'none' ||
    exec.backendReport.oomKilled === true ||
    (exec.resources?.oomKills ?? 0) > 0 ||
    exec.backendReport.timedOut === true ||
    exec.signal !== null;
  const how = describeStop(exec);
  if (stopped) {
    return {
      accepted: false,
      reason: `the program did not end by itself: ${how} (expected exit ${expectedExit}); whatever it wrote before does not count`,
    };
  }
  if (exec.exitCode !== expectedExit) {
    return { accepted: false, reason: `the program ended with ${how}, expected ${expectedExit}` };
  }
  return undefined;
}
