import { readFileSync } from 'node:fs';
import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { inside, outside, type Evidence } from '../../harness/model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../harness/model/probe.js';
import { policyRequires } from '../../harness/required-items.js';

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

const text = (c: Observation['exec']['stdout']): string => Buffer.concat([Buffer.from(c.headBase64, 'base64'), Buffer.from(c.tailBase64, 'base64')]).toString('utf8').toLowerCase();

/**
 * Shares the host's kernel: a process of the box is a task of the host's kernel (the host's whole-/proc scan
 * saw the payload's marked child, or the backend's host pids include the payload's interpreter), or the box
 * printed the host's boot id. A separate kernel is never taken from the box's word (its boot id or uname):
 * it needs the backend to have named live host processes of the box, none of them the payload's program,
 * and the host's scan not to have seen the marked child while the payload demonstrably held it.
 */
export function judgeKernelIdentity(obs: Observation, ctx: ProbeContext, hostBoot: string | undefined = hostBootId()): Judgement {
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const required = policyRequires(ctx.policy, 'isolation.separateKernel');
  const { exec } = obs;
  const shared: string[] = [];
  if (obs.survivorSeenAlive) shared.push(`the host's process scan saw the payload's marked child (sandcheck-survivor-${ctx.nonce}) as a host process`);
  for (const p of (exec.hostProcesses ?? []).slice(0, 2)) shared.push(`the payload's interpreter ran as host pid ${p.pid} (${p.command}, by /proc/${p.pid}/exe)`);
  const printed = [text(exec.stdout), text(exec.stderr)].join('\n');
  if (hostBoot !== undefined && hostBoot.length >= 32 && (printed.includes(hostBoot) || printed.includes(hostBoot.replaceAll('-', '')))) {
    shared.push("the box printed the host kernel's boot id");
  }
  const evidence: Evidence[] = [
    ...shared.map((s) => outside('host-kernel', s, 'host /proc')),
    outside('host-kernel', `the backend named up to ${exec.hostProcessCountMax ?? 0} live host process(es) of the box; ${(exec.hostProcesses ?? []).length} sample(s) ran the payload's program`, 'hostPids'),
    inside('payload-report', "the box's own boot id, uname and /proc/version are in its report: recorded, never proof of a separate kernel", 'stdout'),
    exitEvidence(exec),
    payloadReport(exec),
  ];
  const fact = required ? '' : `; policy ${ctx.policy.name} does not require a separate kernel (isolation.separateKernel), so this is reported, not judged`;
  if (shared.length > 0) {
    return { verdict: required ? 'crossed' : 'not-applicable', reason: `the box shares the host's kernel: ${shared.join('; ')}${fact}`, evidence };
  }
  const named = (exec.hostProcessCountMax ?? 0) > 0;
  const heldLongEnough = exec.wallMs >= KERNEL_HOLD_SECONDS * 1000;
  if (named && heldLongEnough && obs.survivorSeenAlive === false) {
    const reason = `no sign of the host's kernel: the backend named live host processes of the box, none ran the payload's program, and the host's process scan never saw the payload's marked child during its ${KERNEL_HOLD_SECONDS} s hold`;
    return { verdict: required ? 'held' : 'not-applicable', reason: `${reason}${fact}`, evidence };
  }
  const why = !named
    ? 'the backend named no live host process of the box, so the host cannot tell a separate kernel from a hidden one'
    : !heldLongEnough
      ? `the execution lasted ${Math.round(exec.wallMs)} ms, less than the payload's ${KERNEL_HOLD_SECONDS} s hold`
      : "the host's process scan did not run";
  return { verdict: required ? 'inconclusive' : 'not-applicable', reason: `could not tell which kernel the box runs on: ${why}${fact}`, evidence };
}
