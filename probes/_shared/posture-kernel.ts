import { readFileSync } from 'node:fs';
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { survivorName } from '../../lab/kernel-carriers.js';
import { policyRequires } from '../../model/required-items.js';

/** How long the payload keeps its marked child alive (the host's process scan looks for it meanwhile). */
export const KERNEL_HOLD_SECONDS = 3;

/** The host kernel's boot id (random per boot): a box can only print it by sharing the kernel or being handed it. */
export function hostBootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().toLowerCase();
  } catch {
    return undefined;
  }
}

const text = (c: Observation['exec']['stdout']): string =>
  Buffer.concat([Buffer.from(c.headBase64, 'base64'), Buffer.from(c.tailBase64, 'base64')])
    .toString('utf8')
    .toLowerCase();

/**
 * Shares the host's kernel: a process of the box is a task of the host's kernel (the host's whole-/proc scan
 * saw the payload's marked child, or the backend's host pids include the payload's interpreter), or the box
 * printed the host's boot id. A separate kernel is never taken from the box's word (its boot id or uname), nor from
 * what the host did not see (a scan that runs in another pid namespace, or a box on another machine, sees nothing
 * either): it needs the host to have found the payload's own address space (by this execution's nonce) and its
 * marked child's (by the mark) among the processes of one user-space kernel while the box ran, and the host's scan
 * not to have seen that child as a task of its own.
 */
export function judgeKernelIdentity(obs: Observation, ctx: ProbeContext, hostBoot: string | undefined = hostBootId()): Judgement {
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const required = policyRequires(ctx.policy, 'isolation.separateKernel');
  const { exec } = obs;
  const shared: string[] = [];
  if (obs.survivorSeenAlive) shared.push(`the host's process scan saw the payload's marked child (${survivorName(ctx.nonce, true)}) as a host process`);
  for (const p of (exec.hostProcesses ?? []).slice(0, 2))
    shared.push(`the payload's interpreter ran as host pid ${p.pid} (${p.command}, by /proc/${p.pid}/exe)`);
  const printed = [text(exec.stdout), text(exec.stderr)].join('\n');
  if (hostBoot !== undefined && hostBoot.length >= 32 && (printed.includes(hostBoot) || printed.includes(hostBoot.replaceAll('-', '')))) {
    shared.push("the box printed the host kernel's boot id");
  }
  const evidence: Evidence[] = [
    ...shared.map((s) => outside('host-kernel', s, 'host /proc')),
    outside(
      'host-kernel',
      `the backend named up to ${exec.hostProcessCountMax ?? 0} live host process(es) of the box; ${(exec.hostProcesses ?? []).length} sample(s) ran the payload's program`,
      'hostPids',
    ),
    inside('payload-report', "the box's own boot id, uname and /proc/version are in its report: recorded, never proof of a separate kernel", 'stdout'),
    exitEvidence(exec),
    payloadReport(exec),
  ];
  const fact = required ? '' : `; policy ${ctx.policy.name} does not require a separate kernel (isolation.separateKernel), so this is reported, not judged`;
  if (shared.length > 0) {
    return { verdict: required ? 'crossed' : 'not-applicable', reason: `the box shares the host's kernel: ${shared.join('; ')}${fact}`, evidence };
  }
  const usk = exec.userSpaceKernel;
  const kernel = usk?.marked?.kernel;
  if (usk && usk.marked && kernel && usk.kernels.some((k) => k.pid === kernel.pid) && obs.survivorSeenAlive === false) {
    const { marked } = usk;
    evidence.unshift(
      outside('host-proc-mem', usk.tie, `/proc/${usk.addressSpaces[0]?.pid ?? '?'}/mem`),
      outside('host-proc-mem', `the marked child's address space: ${marked.tie}`, `/proc/${marked.addressSpace.pid}/mem`),
    );
    const reason = `the box's program runs on a user-space kernel, ${usk.kernel}: the payload's address space (${usk.tie}) and its marked child's (${marked.tie}) belong to its kernel (pid ${kernel.pid}), and the host's process scan never saw that child as a task of the host's kernel`;
    return { verdict: required ? 'held' : 'not-applicable', reason: `${reason}${fact}`, evidence };
  }
  const named = (exec.hostProcessCountMax ?? 0) > 0;
  const why = !named
    ? 'the backend named no live host process of the box, so the host cannot tell a separate kernel from a hidden one'
    : obs.survivorSeenAlive === undefined
      ? "the host's process scan did not run"
      : !usk
        ? "no process of the box was seen on the host, and no user-space kernel's address space held this execution's nonce: a box the host cannot see is not shown to run on another kernel"
        : !usk.marked
          ? `the payload's address space was found on ${usk.kernel} (${usk.tie}), but its marked child's never was, so the host did not see the box's programs run there while it looked`
          : "the marked child's address space was found without the kernel that ran it";
  return { verdict: required ? 'inconclusive' : 'not-applicable', reason: `could not tell which kernel the box runs on: ${why}${fact}`, evidence };
}
