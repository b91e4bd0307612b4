import { CANARY_PREFIX } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { PAYLOAD_INTERPRETER } from '../../model/payload.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { reportedField } from '../_shared/exposure-judges.js';
import { kernelCarried, tiedToExecution } from '../_shared/identity.js';

/**
 * Crossed when a decoy key's value came out. Held only when the box's own key went through the same read
 * routine (the control value came out), or when the keyring calls were refused and the host saw what refused
 * them: a seccomp filter on the payload's own processes, or (gVisor) a user-space kernel that this execution's
 * nonce ties to the payload, which serves keyctl itself and never hands it to the host's kernel. A filter on
 * the runtime's own processes is not that cause: it never sees the payload's calls.
 */
export function judgeKeyring(obs: Observation, ctx: Pick<ProbeContext, 'nonce'>): Judgement {
  const leaked = canaryCrossing(obs);
  if (leaked) return { ...leaked, reason: `the box read a host decoy key from the kernel keyring: ${leaked.reason}` };
  // The control's own verdict is decided below (a filtered keyctl may explain it), not by unlessAttempted.
  const { positiveControl: _control, ...attempt } = obs;
  const notRun = unlessAttempted(attempt, true);
  if (notRun) return notRun;
  // The interpreter that made the calls, never a runtime's process named as the box's.
  const filtered = (obs.exec.hostProcesses ?? []).filter((p) => p.seccomp === 2 && PAYLOAD_INTERPRETER.test(p.command));
  const evidence = [outside('canary-scan', 'no decoy key value came out of the box'), exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (obs.positiveControl?.seen === true) return { verdict: 'held', reason: "the box's own key read back, but no host decoy key was reachable", evidence };
  const control = reportedField(obs, 'control');
  const refused = typeof control === 'string' && control.startsWith('keyctl refused');
  const carried = refused ? kernelCarried(obs) : undefined;
  if (carried) {
    return {
      verdict: 'held',
      reason: `${carried.lead}: the keyring system calls were refused by that kernel, which serves them itself and never hands them to the host's (${control})`,
      evidence: [...carried.evidence, ...evidence],
    };
  }
  // The filtered interpreter must be this execution's payload (its argv carries the nonce), not another process of the program.
  if (refused && filtered.length > 0 && tiedToExecution(filtered, ctx.nonce)) {
    return {
      verdict: 'held',
      reason: 'the keyring system calls were refused in the box, and the host saw a seccomp filter on its processes',
      evidence: [
        outside(
          'host-proc',
          `${filtered.length} host process(es) running the box's program had Seccomp mode 2 (filter): ${[...new Set(filtered.map((p) => p.command))].slice(0, 3).join(', ')}`,
          '/proc/<pid>/status',
        ),
        ...evidence,
      ],
    };
  }
  return {
    verdict: 'inconclusive',
    reason: "the box's own key never came back through the read routine, and no filter was seen from the host to explain it",
    evidence,
  };
}

export const keyringDecoy: SecurityProbe = {
  kind: 'security',
  id: 'keyring-decoy',
  title: "read a host decoy process's keys through the kernel keyring (not namespaced)",
  category: 'identity',
  policyItem: 'identity.hostCredentials',
  severity: 'high',
  payload: 'keyring-decoy',
  remediation:
    "Run the box in a user namespace of its own and filter keyctl, add_key and request_key with seccomp (Docker's default profile does); never run it as the host's root without one.",
  attack: ['T1555', 'T1552'],
  cwe: ['CWE-668', 'CWE-522'],
  positiveControl: 'file',
  sampleProcesses: true,
  releaseWhenSeen: 'sampled',
  // Where the host never sees the payload's interpreter (gVisor), the user-space kernel tied to it by the nonce.
  kernelCarriers: true,
  hostPrecondition: (ctx) =>
    ctx.hostDecoys.keyDescriptions?.length ? undefined : `the host refused the decoy keys: ${ctx.hostDecoys.keyringUnavailable ?? 'no keyring decoy'}`,
  hostDecoyProcess: true,
  args: (ctx) => ({
    canaryPrefix: CANARY_PREFIX,
    descriptions: ctx.hostDecoys.keyDescriptions ?? [],
    holdSeconds: Math.min(2, ctx.policy.resources.wallSeconds * 0.4),
  }),
  judge: judgeKeyring,
};
