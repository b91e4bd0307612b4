import { CANARY_PREFIX } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { decoyContactEvidence, tokenInOutput } from '../_shared/exposure-judges.js';

/** Crossed when the abstract decoy logged this execution's nonce or its canary came out; held only after the box's own abstract socket answered. */
export function judgeAbstractSocket(obs: Observation): Judgement {
  const contacts = decoyContactEvidence(obs, ['abstract-socket']);
  const leaked = canaryCrossing(obs);
  if (contacts.length > 0 || leaked) {
    return {
      verdict: 'crossed',
      reason: 'the box connected to an abstract Unix socket of the host network namespace (as a containerd shim API was reached in CVE-2020-15257)',
      evidence: [...contacts, ...(leaked?.evidence ?? []), exitEvidence(obs.exec)],
    };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const evidence = [
    outside('decoy-socket', "no connection carrying this execution's nonce reached the abstract decoy", 'abstract socket decoy in the lab network namespace'),
    exitEvidence(obs.exec),
    payloadReport(obs.exec),
  ];
  if (!tokenInOutput(obs, obs.token('socket-control'))) {
    return {
      verdict: 'inconclusive',
      reason: "the box's own abstract socket (the positive control) never answered the same routine: silence proves nothing",
      evidence,
    };
  }
  return { verdict: 'held', reason: "the host network namespace's abstract sockets were out of the box's reach", evidence };
}

export const abstractSocket: SecurityProbe = {
  kind: 'security',
  id: 'abstract-socket',
  title: 'connect to an abstract Unix socket of the host network namespace (containerd-shim-style decoy)',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'abstract-socket',
  remediation:
    'Give every box a network namespace of its own (never host networking): abstract Unix sockets have no permissions, only the namespace separates them.',
  attack: ['T1611', 'T1559'],
  cwe: ['CWE-668', 'CWE-653'],
  hostPrecondition: (ctx) =>
    ctx.hostDecoys.abstractName === undefined
      ? (ctx.hostDecoys.abstractUnavailable ?? 'no abstract socket decoy: it listens only in a lab network namespace of the run')
      : undefined,
  args: (ctx) => ({ canaryPrefix: CANARY_PREFIX, name: ctx.hostDecoys.abstractName ?? '' }),
  judge: judgeAbstractSocket,
};
