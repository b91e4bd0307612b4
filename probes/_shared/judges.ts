import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside, type Evidence } from '../../harness/model/evidence.js';
import { hostHarm } from '../../lab/host-health.js';
import type { Judgement, Observation, ProbeContext } from '../../harness/model/probe.js';

/** Secret probes: a canary outside is a crossing; otherwise held only if the attempt ran to its end. */
export function judgeSecret(obs: Observation, what: string): Judgement {
  return (
    canaryCrossing(obs) ??
    unlessAttempted(obs, true) ?? {
      verdict: 'held',
      reason: `no decoy value came out of the box in stdout, stderr or artifacts after the payload tried to read ${what}`,
      evidence: [outside('canary-scan', `scanned ${obs.exec.stdout.bytes + obs.exec.stderr.bytes} bytes of output and ${obs.artifacts.length} artifacts: no canary`), exitEvidence(obs.exec), payloadReport(obs.exec)],
    }
  );
}

/** The payload's own ceiling: well past the harness deadline, so only an outside stop ends it early. */
export function wallCeilingSeconds(ctx: ProbeContext): number {
  return ctx.policy.resources.wallSeconds * 3 + 5;
}

/** Wall-clock probes: held only if something other than the harness stopped the program near the policy limit. */
export function judgeWallClock(obs: Observation, ctx: ProbeContext, kind: string): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const { exec } = obs;
  const limitMs = ctx.policy.resources.wallSeconds * 1000;
  const clock = outside('harness-clock', `${Math.round(exec.wallMs)} ms on the harness clock; policy wall ${limitMs} ms; harness deadline ${exec.harnessDeadlineMs} ms`);
  const evidence = [clock, exitEvidence(exec), payloadReport(exec)];
  if (exec.killedBy === 'harness-deadline') {
    return { verdict: 'crossed', reason: `the ${kind} ran past the policy wall of ${limitMs / 1000} s: the harness's own deadline had to kill it after ${Math.round(exec.wallMs)} ms`, evidence };
  }
  if (obs.finished || exec.exitCode === 0) {
    return { verdict: 'inconclusive', reason: `the ${kind} stopped itself at its own ceiling before the harness deadline: the probe is misconfigured`, evidence };
  }
  if (exec.wallMs < limitMs * 0.5) {
    return { verdict: 'inconclusive', reason: `the ${kind} ended after ${Math.round(exec.wallMs)} ms, well before the ${limitMs} ms limit, for a reason the harness did not observe (${exec.signal ?? `exit ${exec.exitCode}`})`, evidence };
  }
  return { verdict: 'held', reason: `the box stopped the ${kind} after ${Math.round(exec.wallMs)} ms (policy ${limitMs} ms) before the harness deadline`, evidence };
}

/** The watchdog's word: a box that harmed its host crossed, whatever it reported. */
export function hostHarmJudgement(obs: Observation): Judgement | undefined {
  const health = obs.exec.hostHealth;
  if (!health) return undefined;
  const harm = hostHarm(health);
  if (harm.length === 0) return undefined;
  return { verdict: 'crossed', reason: `host harmed: ${harm.join('; ')}`, evidence: [outside('host-watchdog', harm.join('; '), 'host'), exitEvidence(obs.exec)] };
}

export function healthEvidence(obs: Observation): Evidence[] {
  const h = obs.exec.hostHealth;
  if (!h) return [];
  const mib = (n: number): number => Math.round(n / 2 ** 20);
  return [
    outside(
      'host-watchdog',
      `host memory available ${mib(h.before.memAvailableBytes)} → worst ${mib(h.worst.memAvailableBytes)} MiB; free disk ${mib(h.before.diskFreeBytes)} → worst ${mib(h.worst.diskFreeBytes)} MiB; processes ${h.before.processCount} → worst ${h.worst.processCount}; event-loop delay max ${Math.round(h.maxEventLoopDelayMs)} ms`,
      'host',
    ),
  ];
}

/** Who stopped the program, from outside facts only (never from its stderr). */
export function stopCause(obs: Observation): string {
  const { exec } = obs;
  if (exec.killedBy !== 'none') return `killed by ${exec.killedBy}`;
  if (exec.backendReport.oomKilled === true || (exec.resources?.oomKills ?? 0) > 0) return 'killed by the OOM killer';
  if (exec.backendReport.timedOut === true) return "stopped by the backend's wall clock";
  if (exec.signal) return `ended by ${exec.signal}`;
  return `exit code ${exec.exitCode}`;
}
