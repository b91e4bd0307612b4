import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { Judgement, Observation } from '../../harness/model/probe.js';
import { hasCapabilities, type ProcessIdentity } from '../../lab/host-process.js';

export const describeIdentity = (p: ProcessIdentity): string =>
  `pid ${p.pid} ${p.command}: uid ${p.realUid}/euid ${p.effectiveUid}, CapEff ${p.capEff}${p.hostUserNamespace ? '' : ' (in its own user namespace)'}, NoNewPrivs ${p.noNewPrivs ?? '?'}, Seccomp ${p.seccomp ?? '?'}`;

/**
 * The box's own program as the host kernel saw it (/proc/<pid>/status), never as the payload reported
 * it. The sampler keeps only processes running the payload's interpreter or started by it (not a
 * runtime's init before it became the payload), so the verdict does not depend on when it looked.
 */
export function ownProgram(obs: Observation): ProcessIdentity[] {
  return obs.exec.hostProcesses ?? [];
}

export function identityEvidence(obs: Observation, procs: readonly ProcessIdentity[]) {
  return [...procs.slice(0, 8).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)), exitEvidence(obs.exec), payloadReport(obs.exec)];
}

/** Why no process of the box's own program was sampled: the backend named none, or only runtime processes. */
export function unseen(obs: Observation): string {
  const named = obs.exec.hostProcessCountMax ?? 0;
  return named > 0
    ? `the backend named ${named} host process(es) of the box but none ran the payload's program (a runtime whose kernel runs in user space, such as gVisor, shows only itself)`
    : "no process of the box's own program (the payload's interpreter or what it ran) was seen from the host";
}

/** `bad` names what is wrong with one process of the box's program, or undefined. */
export function judgeHostIdentity(obs: Observation, what: string, bad: (p: ProcessIdentity) => string | undefined): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const procs = ownProgram(obs);
  const evidence = identityEvidence(obs, procs);
  if (procs.length === 0) return { verdict: 'inconclusive', reason: `${unseen(obs)}, so ${what} could not be judged from outside`, evidence };
  const findings = procs.flatMap((p) => {
    const b = bad(p);
    return b ? [`${p.command} (pid ${p.pid}) ${b}`] : [];
  });
  if (findings.length > 0) return { verdict: 'crossed', reason: findings.slice(0, 3).join('; '), evidence };
  return { verdict: 'held', reason: `all ${procs.length} samples of the box's own program seen from the host: ${what} as required`, evidence };
}

export const rootOnHost = (p: ProcessIdentity): string | undefined => (p.effectiveUid === 0 ? 'runs as root (euid 0) on the host' : undefined);
export const withCapabilities = (p: ProcessIdentity): string | undefined => (hasCapabilities(p) ? `holds capabilities (CapEff ${p.capEff})` : undefined);
export const mayGainPrivileges = (p: ProcessIdentity): string | undefined => (p.noNewPrivs === 0 ? 'can gain privileges through exec (NoNewPrivs 0)' : undefined);
