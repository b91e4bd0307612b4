import { canaryCrossing, describeExit, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import { hostHarm } from '../../lab/host-health.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { outputText } from './exposure-judges.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';

/**
 * Secret probes: a canary outside is a crossing; otherwise held only if the attempt ran to its end. `found` matches
 * the payload's line for a value it read (captured), which it prints only for values carrying the canary prefix: such
 * a line whose value no longer carries it came out altered (masked, redacted on its way out), so the scan is blind.
 */
export function judgeSecret(obs: Observation, what: string, found?: RegExp): Judgement {
  const altered = found ? [...outputText(obs).matchAll(found)].map((m) => m[0]).filter((line) => !line.includes(CANARY_PREFIX)) : [];
  if (altered.length > 0 && !canaryCrossing(obs)) {
    return {
      verdict: 'inconclusive',
      reason: `the payload read ${altered.length} decoy-shaped value(s) that did not come out intact (${JSON.stringify(altered[0]?.slice(0, 80))}): the output was masked or altered on its way out, so the canary scan proves nothing`,
      evidence: [exitEvidence(obs.exec), payloadReport(obs.exec)],
    };
  }
  return (
    canaryCrossing(obs) ??
    unlessAttempted(obs, true) ?? {
      verdict: 'held',
      reason: `no decoy value came out of the box in stdout, stderr or artifacts after the payload tried to read ${what}`,
      evidence: [
        outside('canary-scan', `scanned ${obs.exec.stdout.bytes + obs.exec.stderr.bytes} bytes of output and ${obs.artifacts.length} artifacts: no canary`),
        exitEvidence(obs.exec),
        payloadReport(obs.exec),
      ],
    }
  );
}

/** The payload's own ceiling: well past the harness deadline, so only an outside stop ends it early. */
export function wallCeilingSeconds(ctx: ProbeContext): number {
  return ctx.policy.resources.wallSeconds * 3 + 5;
}

/**
 * Wall-clock probes: held only if the box stopped the program near the policy limit, on the
 * harness's clock: not before 90% of it (a crash or an early kill is not the wall clock), and
 * not later than the limit plus the policy's tolerance after the payload's first byte (the box's
 * start-up, which its own clock may or may not count, is left out of that bound).
 */
export function judgeWallClock(obs: Observation, ctx: ProbeContext, kind: string): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const { exec } = obs;
  const limitMs = ctx.policy.resources.wallSeconds * 1000;
  const toleranceMs = ctx.policy.resources.wallToleranceMs;
  const ranMs = Math.round(exec.wallMs - (exec.firstOutputMs ?? 0));
  const clock = outside(
    'harness-clock',
    `${Math.round(exec.wallMs)} ms from exec to end on the harness clock, ${ranMs} ms after the payload's first byte; policy wall ${limitMs} ms + tolerance ${toleranceMs} ms; harness deadline ${exec.harnessDeadlineMs} ms`,
  );
  const evidence = [clock, outside('stop-cause', stopCause(obs)), exitEvidence(exec), payloadReport(exec)];
  if (exec.killedBy === 'harness-deadline') {
    return {
      verdict: 'crossed',
      reason: `the ${kind} ran past the policy wall of ${limitMs / 1000} s: the harness's own deadline had to kill it after ${Math.round(exec.wallMs)} ms`,
      evidence,
    };
  }
  if (exec.killedBy !== 'none')
    return { verdict: 'inconclusive', reason: `the harness stopped the ${kind} (${exec.killedBy}) before any wall clock showed`, evidence };
  if (obs.finished || exec.exitCode === 0) {
    return {
      verdict: 'inconclusive',
      reason: `the ${kind} stopped itself at its own ceiling before the harness deadline: the probe is misconfigured`,
      evidence,
    };
  }
  if (exec.wallMs < limitMs * 0.9) {
    return {
      verdict: 'inconclusive',
      reason: `the ${kind} ended after ${Math.round(exec.wallMs)} ms, before 90% of the ${limitMs} ms limit: something other than the wall clock stopped it (${stopCause(obs)})`,
      evidence,
    };
  }
  if (ranMs > limitMs + toleranceMs) {
    return {
      verdict: 'crossed',
      reason: `the box let the ${kind} run ${ranMs} ms after it started, past the ${limitMs} ms wall and its ${toleranceMs} ms tolerance`,
      evidence,
    };
  }
  // An end near the limit is the wall clock's only with a kill to show for it: a signal, or the exit status of a killed
  // program (124 from timeout(1), 128+n through a shell or an init); not a crash's exit 1, nor a remote call that
  // returned while the program may still run. The backend's timeout flag is a claim and decides nothing.
  if (!endedByKill(exec)) {
    return {
      verdict: 'inconclusive',
      reason: `the ${kind} ended ${ranMs} ms after it started with ${exec.exitCode === null ? 'neither an exit status nor a signal' : `exit code ${exec.exitCode}`}: no kill, so nothing shows the box's wall clock stopped it`,
      evidence,
    };
  }
  const running = ranOnAfterExec(obs);
  if (running) return { ...running, evidence: [...running.evidence, ...evidence] };
  return {
    verdict: 'held',
    reason: `the box stopped the ${kind} ${ranMs} ms after it started (policy ${limitMs} ms + ${toleranceMs} ms tolerance), before the harness deadline`,
    evidence,
  };
}

/** The exec returned on a kill, yet the host still saw the payload running afterwards: the kill was not the program's. */
export function ranOnAfterExec(obs: Observation): Judgement | undefined {
  const still = obs.runningAfterExec ?? [];
  if (still.length === 0) return undefined;
  return {
    verdict: 'inconclusive',
    reason: `the exec returned (${describeExit(obs.exec)}), yet the host still saw the payload running 1 s later (${still.slice(0, 2).join(', ')}): whatever was killed, the program was not`,
    evidence: [outside('host-proc-scan', `still running after the exec returned: ${still.slice(0, 3).join(', ')}`, '/proc')],
  };
}

/** The program was killed: a signal, or the exit status of a killed program (124 from timeout(1), 128+n through a shell or an init). */
export function endedByKill(exec: Observation['exec']): boolean {
  return exec.signal !== null || (exec.exitCode !== null && (exec.exitCode === 124 || exec.exitCode > 128));
}

/** The watchdog's word: a box that harmed its host crossed, whatever it reported. */
export function hostHarmJudgement(obs: Observation): Judgement | undefined {
  const health = obs.exec.hostHealth;
  if (!health) return undefined;
  const harm = hostHarm(health);
  if (harm.length === 0) return undefined;
  return {
    verdict: 'crossed',
    reason: `host harmed: ${harm.join('; ')}`,
    evidence: [outside('host-watchdog', harm.join('; '), 'host'), exitEvidence(obs.exec)],
  };
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

/** An outside adapter's own counters, shown as what they are: its claim (the host's own read of its cgroups is `resources`). */
export function adapterCountersEvidence(obs: Observation): Evidence[] {
  const c = obs.exec.adapterResources;
  if (!c) return [];
  const said = Object.entries(c)
    .filter(([k]) => k !== 'source')
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(', ');
  const host = obs.exec.resources
    ? 'the host read the cgroups itself'
    : "the host could not read the box's cgroups itself (no host pid of the box's program, or its cgroup is the harness's own)";
  return [inside('adapter-counters', `the adapter reported ${said || 'no counter'}: its claim, never evidence; ${host}`, c.source)];
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
