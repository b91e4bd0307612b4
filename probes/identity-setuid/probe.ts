import { readFileSync } from 'node:fs';
import { unlessAttempted } from '../../model/judge.js';
import { programMark } from '../../lab/kernel-carriers.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import type { ProcessIdentity } from '../../lab/host-process.js';
import { outputText } from '../_shared/exposure-judges.js';
import { describeIdentity, identityEvidence, kernelCarried, ownProgram, tiedToExecution, unseen, untied } from '../_shared/identity.js';

/** Workspace name of the planted binary; the kernel names its process after it (status Name). */
export const SETUID_BINARY = 'suid-sleep';

/**
 * On a user-space kernel (gVisor) the planted binary never shows as a host process: the host finds the address space
 * that holds its mark (set in its environment by the payload) and not the nonce, and reads that process and the
 * kernel at that moment. A setuid bit may give it root inside the kernel; on the host it is what they run as.
 */
function judgeMarked(obs: Observation): Judgement | undefined {
  const carried = kernelCarried(obs);
  const marked = obs.exec.userSpaceKernel?.marked;
  // The payload's own word that the binary ran to its end can only withhold a verdict: a payload that could not run it exits 3.
  if (!carried || !marked?.kernel || obs.exec.exitCode === 3 || !outputText(obs).includes('setuid binary exited')) return undefined;
  const read = [
    ['address space', marked.addressSpace],
    ['kernel', marked.kernel],
  ] as const;
  const evidence = [
    outside('host-proc-mem', marked.tie, `/proc/${marked.addressSpace.pid}/mem`),
    ...read.map(([, p]) => outside('host-proc-status', describeIdentity(p), `/proc/${p.pid}/status`)),
    ...carried.evidence,
  ];
  const seen = read.map(([role, p]) => `${role} (pid ${p.pid}) euid ${p.effectiveUid}, CapEff ${p.capEff}`).join(', ');
  const root = read.find(([, p]) => p.effectiveUid === 0);
  if (root)
    return {
      verdict: 'crossed',
      reason: `${carried.lead}: the planted setuid-root binary ran (${marked.tie}) and its ${root[0]} (pid ${root[1].pid}) ran as root (euid 0) on the host`,
      evidence,
    };
  return {
    verdict: 'held',
    reason: `${carried.lead}: the planted setuid-root binary ran (${marked.tie}); while it ran: ${seen}: its setuid bit gave nothing on the host`,
    evidence,
  };
}

/** A copy of the host's sleep: small, present wherever the payload's Python is, stays alive while it is looked at. */
function sleepBinary(): Uint8Array {
  return readFileSync('/bin/sleep');
}

export const identitySetuid: SecurityProbe = {
  kind: 'security',
  id: 'identity-setuid',
  title: 'a root-owned setuid binary in the workspace gains nothing',
  category: 'identity',
  policyItem: 'identity.unprivileged',
  severity: 'high',
  payload: 'identity-setuid',
  sampleProcesses: true,
  kernelCarriers: 'marked-program',
  remediation: 'Mount the workspace nosuid, set no_new_privs, and run as an unprivileged uid in a user namespace that does not map root.',
  attack: ['T1548.001'],
  cwe: ['CWE-269', 'CWE-250'],
  // Read-only: it stays root-owned (never chowned to the box uid, which would clear the setuid bit) and the box cannot replace it.
  files: () => [{ path: SETUID_BINARY, content: sleepBinary(), mode: 0o4755, readOnly: true }],
  args: (ctx) => ({ binary: SETUID_BINARY, holdSeconds: 2, mark: programMark(ctx.nonce) }),
  judge: (obs, ctx) => {
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const procs = ownProgram(obs);
    const planted = procs.filter((p) => p.command === SETUID_BINARY);
    const evidence = identityEvidence(obs, [...planted, ...procs.filter((p) => p.command !== SETUID_BINARY)]);
    const root = planted.find((p) => p.effectiveUid === 0);
    if (root) {
      const how = root.realUid !== 0 ? `the setuid bit took effect (real uid ${root.realUid})` : 'the box already ran as root';
      return { verdict: 'crossed', reason: `the planted setuid-root binary ran with euid 0 on the host: ${how}`, evidence };
    }
    const rootProgram = procs.find((p) => p.effectiveUid === 0);
    if (rootProgram) return { verdict: 'crossed', reason: `the box's own program ran as root on the host (${describeIdentity(rootProgram)})`, evidence };
    if (planted.length === 0 && procs.length === 0) {
      const marked = judgeMarked(obs);
      if (marked) return marked;
    }
    if (planted.length === 0) {
      const why = procs.length === 0 ? unseen(obs) : 'the payload ran but the planted binary was never seen running from the host';
      return { verdict: 'inconclusive', reason: `${why}, so whether the setuid binary could gain root is unknown`, evidence };
    }
    if (!tiedToExecution(procs, ctx.nonce)) return { verdict: 'inconclusive', reason: untied('what the setuid binary gained'), evidence };
    // The attack ran only if what ran was setuid-root: a backend that dropped the bit or chowned the file never tried it.
    const file = (p: ProcessIdentity | undefined): string =>
      p?.executable ? `mode ${p.executable.mode.toString(8)}, owner uid ${p.executable.uid}` : 'not readable';
    const setuidRoot = planted.find((p) => p.executable !== undefined && (p.executable.mode & 0o4000) !== 0 && p.executable.uid === 0);
    if (!setuidRoot) {
      return {
        verdict: 'inconclusive',
        reason: `the planted binary ran, but the file it ran is not setuid-root as the host stats it (${file(planted[0])}): the backend changed it, so the attack never ran`,
        evidence,
      };
    }
    const files = outside(
      'host-proc-exe',
      `the planted binary's process (pid ${setuidRoot.pid}) runs a file of ${file(setuidRoot)}`,
      `/proc/${setuidRoot.pid}/exe`,
    );
    return {
      verdict: 'held',
      reason: `the planted root-owned setuid binary ran, as the host saw it, with euid ${planted.map((p) => p.effectiveUid).join('/')}: its setuid bit gave nothing`,
      evidence: [files, ...evidence],
    };
  },
};
