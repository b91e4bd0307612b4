import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside, type Evidence } from '../../harness/model/evidence.js';
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

/**
 * On a user-space kernel (gVisor) the host never sees the box's program as a process: the address space that held
 * this execution's nonce runs its code and its parent, the kernel, serves its system calls. Both are judged in its
 * place (file servers too where `withOthers`), and only when the kernel was read: without it the layer a box meets
 * after its system calls is unknown.
 */
export function kernelCarried(obs: Observation, withOthers = false): { procs: ProcessIdentity[]; lead: string; evidence: Evidence[] } | undefined {
  const usk = obs.exec.userSpaceKernel;
  if (!usk || ownProgram(obs).length > 0 || usk.kernels.length === 0) return undefined;
  const all = [...usk.addressSpaces, ...usk.kernels, ...(withOthers ? usk.fileServers : [])];
  const procs = all.filter((p, i) => all.findIndex((q) => q.pid === p.pid) === i);
  const pids = (list: readonly ProcessIdentity[]): string => list.map((p) => p.pid).join(', ');
  const lead = `the box's program runs on a user-space kernel, ${usk.kernel} (${usk.tie}; its kernel: pid ${pids(usk.kernels)}${withOthers && usk.fileServers.length > 0 ? `; its file servers: pid ${pids(usk.fileServers)}` : ''})`;
  const evidence = [outside('host-proc-mem', usk.tie, `/proc/${usk.addressSpaces[0]?.pid ?? '?'}/mem`), ...procs.slice(0, 8).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`))];
  return { procs, lead, evidence };
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
  const own = ownProgram(obs);
  const carried = kernelCarried(obs);
  const procs = carried?.procs ?? own;
  const evidence = [...(carried?.evidence ?? []), ...identityEvidence(obs, own)];
  if (procs.length === 0) return { verdict: 'inconclusive', reason: `${unseen(obs)}, so ${what} could not be judged from outside`, evidence };
  const findings = procs.flatMap((p) => {
    const b = bad(p);
    return b ? [`${p.command} (pid ${p.pid}) ${b}`] : [];
  });
  const lead = carried ? `${carried.lead}: ` : '';
  if (findings.length > 0) return { verdict: 'crossed', reason: `${lead}${findings.slice(0, 3).join('; ')}`, evidence };
  const who = carried ? `host processes that run its code or serve its system calls` : `samples of the box's own program`;
  return { verdict: 'held', reason: `${lead}all ${procs.length} ${who} seen from the host: ${what} as required`, evidence };
}

export const rootOnHost = (p: ProcessIdentity): string | undefined => (p.effectiveUid === 0 ? 'runs as root (euid 0) on the host' : undefined);
export const withCapabilities = (p: ProcessIdentity): string | undefined => (hasCapabilities(p) ? `holds capabilities (CapEff ${p.capEff})` : undefined);
export const mayGainPrivileges = (p: ProcessIdentity): string | undefined => (p.noNewPrivs === 0 ? 'can gain privileges through exec (NoNewPrivs 0)' : undefined);
