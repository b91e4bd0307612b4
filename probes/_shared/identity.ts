import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { Judgement, Observation } from '../../harness/model/probe.js';
import { hasCapabilities, type ProcessIdentity } from '../../lab/host-process.js';

export const describeIdentity = (p: ProcessIdentity): string =>
  `pid ${p.pid} ${p.command}: uid ${p.realUid}/euid ${p.effectiveUid}, CapEff ${p.capEff}${p.hostUserNamespace ? '' : ' (in its own user namespace)'}, NoNewPrivs ${p.noNewPrivs ?? '?'}, Seccomp ${p.seccomp ?? '?'}`;

/**
 * Identity as the host kernel saw the box's processes (/proc/<pid>/status), never as the payload
 * reported it. `bad` names what is wrong with one process, or undefined.
 */
export function judgeHostIdentity(obs: Observation, what: string, bad: (p: ProcessIdentity) => string | undefined): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const procs = obs.exec.hostProcesses ?? [];
  const evidence = [...procs.slice(0, 8).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)), exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (procs.length === 0) {
    return { verdict: 'inconclusive', reason: `the backend named no host pids for the box, so ${what} could not be seen from outside`, evidence };
  }
  const findings = procs.flatMap((p) => {
    const b = bad(p);
    return b ? [`${p.command} (pid ${p.pid}) ${b}`] : [];
  });
  if (findings.length > 0) return { verdict: 'crossed', reason: findings.slice(0, 3).join('; '), evidence };
  return { verdict: 'held', reason: `all ${procs.length} processes seen from the host: ${what} as required`, evidence };
}

export const rootOnHost = (p: ProcessIdentity): string | undefined => (p.effectiveUid === 0 ? 'runs as root (euid 0) on the host' : undefined);
export const withCapabilities = (p: ProcessIdentity): string | undefined => (hasCapabilities(p) ? `holds capabilities (CapEff ${p.capEff})` : undefined);
export const mayGainPrivileges = (p: ProcessIdentity): string | undefined => (p.noNewPrivs === 0 ? 'can gain privileges through exec (NoNewPrivs 0)' : undefined);
