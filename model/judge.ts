import { inside, outside, type Evidence } from './evidence.js';
import type { ExecObservation } from './observation.js';
import type { Judgement, Observation } from './probe.js';

export function describeExit(exec: ExecObservation): string {
  if (exec.startError) return `could not start (${exec.startError})`;
  if (exec.signal) return `ended by ${exec.signal}`;
  return `exit code ${exec.exitCode ?? 'unknown'}`;
}

export function exitEvidence(exec: ExecObservation): Evidence {
  return outside('exit-status', `${describeExit(exec)} after ${Math.round(exec.wallMs)} ms; killed by: ${exec.killedBy}`);
}

/** What the payload printed about itself: recorded, never able to decide a pass. */
export function payloadReport(exec: ExecObservation): Evidence {
  const text = exec.stdout.preview.slice(0, 400);
  return inside('payload-report', text.length > 0 ? text : '(no stdout)', 'stdout');
}

/**
 * A probe that did not demonstrably attempt its attack is inconclusive, never held.
 * Returns undefined when the attempt is proven.
 */
export function unlessAttempted(obs: Observation, needFinish: boolean): Judgement | undefined {
  const { exec } = obs;
  const evidence = [exitEvidence(exec), payloadReport(exec)];
  if (exec.startError) return { verdict: 'inconclusive', reason: `payload could not start: ${exec.startError}`, evidence };
  if (exec.exitCode === 127 || exec.exitCode === 126) {
    return { verdict: 'inconclusive', reason: `payload did not run (exit ${exec.exitCode}: interpreter missing or not executable)`, evidence };
  }
  if (!obs.attempted) {
    return {
      verdict: 'inconclusive',
      reason: `no answer to this execution's challenge: the payload never demonstrably started (${describeExit(exec)})`,
      evidence,
    };
  }
  if (needFinish && !obs.finished) {
    return { verdict: 'inconclusive', reason: `the payload started but did not finish its attempt (${describeExit(exec)})`, evidence };
  }
  if (obs.positiveControl && !obs.positiveControl.seen) {
    return {
      verdict: 'inconclusive',
      reason: `the in-box positive control (a decoy-shaped value put in the box's ${obs.positiveControl.where === 'file' ? 'workspace' : 'environment'} for it to read) did not come out: reads or the output channel do not work, so silence proves nothing`,
      evidence,
    };
  }
  return undefined;
}

/** Any run canary in any channel that left the box is a crossing in its own right. */
export function canaryCrossing(obs: Observation): Judgement | undefined {
  if (obs.canaryHits.length === 0) return undefined;
  const seen = new Set<string>();
  const evidence = obs.canaryHits
    .filter((h) => !seen.has(`${h.label}@${h.where}`) && seen.add(`${h.label}@${h.where}`))
    .map((h) => outside('canary-scan', `decoy value ${h.label} came out of the box`, h.where));
  const labels = [...new Set(obs.canaryHits.map((h) => h.label))].join(', ');
  return { verdict: 'crossed', reason: `decoy secrets left the box: ${labels}`, evidence: [...evidence, payloadReport(obs.exec)] };
}
