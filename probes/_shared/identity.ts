import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { hasCapabilities, postureOf, type ProcessIdentity } from '../../lab/host-process.js';

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
  return [
    ...procs.slice(0, 8).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)),
    exitEvidence(obs.exec),
    payloadReport(obs.exec),
  ];
}

/** The host processes judged in place of the box's program on a user-space kernel, with how to name each. */
export interface KernelCarried {
  procs: ProcessIdentity[];
  /** Opens every reason: which kernel, how it was tied to this execution, which processes were read. */
  lead: string;
  /** "address space (pid 9)", "kernel (pid 8)", "file server (pid 7)". */
  who(p: ProcessIdentity): string;
  evidence: Evidence[];
}

/**
 * On a user-space kernel (gVisor) the host never sees the box's program as a process: the address spaces of the
 * kernel that held this execution's nonce run its code and the kernel serves its system calls. They are judged in
 * its place, and only when the kernel was read (without it the layer a box meets after its system calls is
 * unknown). File servers open the box's files on the host: the files probes judge them (`withFileServers`); the
 * others name them, unjudged.
 */
export function kernelCarried(obs: Observation, withFileServers = false): KernelCarried | undefined {
  const usk = obs.exec.userSpaceKernel;
  if (!usk || ownProgram(obs).length > 0 || usk.kernels.length === 0) return undefined;
  const role = new Map<number, string>();
  for (const [list, name] of [
    [usk.fileServers, 'file server'],
    [usk.addressSpaces, 'address space'],
    [usk.kernels, 'kernel'],
  ] as const)
    for (const p of list) role.set(p.pid, name);
  const all = [...usk.addressSpaces, ...usk.kernels, ...(withFileServers ? usk.fileServers : [])];
  const procs = all.filter((p, i) => all.findIndex((q) => q.pid === p.pid) === i);
  const pids = (list: readonly ProcessIdentity[]): string => list.map((p) => p.pid).join(', ');
  const servers =
    usk.fileServers.length === 0
      ? ''
      : withFileServers
        ? `; its file servers: pid ${pids(usk.fileServers)}`
        : `; its file servers (pid ${pids(usk.fileServers)}: ${usk.fileServers.map((p) => `uid ${p.effectiveUid}, CapEff ${p.capEff}`).join('; ')}) open its files on the host and are judged by the files probes only`;
  const lead = `the box's program runs on a user-space kernel, ${usk.kernel} (${usk.tie}; its address spaces: pid ${pids(usk.addressSpaces)}; its kernel: pid ${pids(usk.kernels)}${servers})`;
  const evidence = [
    outside('host-proc-mem', usk.tie, `/proc/${usk.addressSpaces[0]?.pid ?? '?'}/mem`),
    ...procs.slice(0, 8).map((p) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)),
  ];
  return { procs, lead, who: (p) => `${role.get(p.pid) ?? p.command} (pid ${p.pid})`, evidence };
}

/**
 * Whether some sample is this very execution's payload: its command line, read by the host with its posture, carries
 * the nonce. Without one, the samples may be any process of that program the backend named (another box, a launcher).
 */
export const tiedToExecution = (procs: readonly ProcessIdentity[], nonce: string): boolean => procs.some((p) => postureOf(p)?.cmdline.includes(nonce) ?? false);

export const untied = (what: string): string =>
  `no process of the box's program whose command line the host read carries this execution's nonce, so none is shown to be the payload: ${what} could not be judged`;

/** Why no process of the box's own program was sampled: the backend named none, or only runtime processes. */
export function unseen(obs: Observation): string {
  const named = obs.exec.hostProcessCountMax ?? 0;
  return named > 0
    ? `the backend named ${named} host process(es) of the box but none ran the payload's program (a runtime whose kernel runs in user space, such as gVisor, shows only itself)`
    : "no process of the box's own program (the payload's interpreter or what it ran) was seen from the host";
}

/** `bad` names what is wrong with one process of the box's program, or undefined. */
export function judgeHostIdentity(obs: Observation, ctx: ProbeContext, what: string, bad: (p: ProcessIdentity) => string | undefined): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const own = ownProgram(obs);
  const carried = kernelCarried(obs);
  const procs = carried?.procs ?? own;
  const evidence = [...(carried?.evidence ?? []), ...identityEvidence(obs, own)];
  if (procs.length === 0) return { verdict: 'inconclusive', reason: `${unseen(obs)}, so ${what} could not be judged from outside`, evidence };
  const findings = procs.flatMap((p) => {
    const b = bad(p);
    return b ? [`${carried ? carried.who(p) : `${p.command} (pid ${p.pid})`} ${b}`] : [];
  });
  const lead = carried ? `${carried.lead}: ` : '';
  if (findings.length > 0) return { verdict: 'crossed', reason: `${lead}${findings.slice(0, 3).join('; ')}`, evidence };
  if (carried) return { verdict: 'held', reason: `${lead}the ${procs.length} address space(s) and kernel the host read: ${what} as required`, evidence };
  if (!tiedToExecution(own, ctx.nonce)) return { verdict: 'inconclusive', reason: untied(what), evidence };
  return { verdict: 'held', reason: `all ${procs.length} samples of the box's own program seen from the host: ${what} as required`, evidence };
}

export const rootOnHost = (p: ProcessIdentity): string | undefined => (p.effectiveUid === 0 ? 'runs as root (euid 0) on the host' : undefined);
export const withCapabilities = (p: ProcessIdentity): string | undefined => (hasCapabilities(p) ? `holds capabilities (CapEff ${p.capEff})` : undefined);
export const mayGainPrivileges = (p: ProcessIdentity): string | undefined =>
  p.noNewPrivs === 0 ? 'can gain privileges through exec (NoNewPrivs 0)' : undefined;
