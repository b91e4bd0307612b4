import { CANARY_PREFIX } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { decoyContactEvidence, reportedField } from '../_shared/exposure-judges.js';

/**
 * Crossed when the agent decoy logged this execution's nonce or its identity's canary came out; held only after
 * the box's own agent answered the same routine and the walk for agent sockets covered its whole scope.
 */
export function judgeAgentSocket(obs: Observation, ctx: Pick<ProbeContext, 'hostDecoys'>): Judgement {
  const contacts = decoyContactEvidence(obs, ['agent-socket']);
  const leaked = canaryCrossing(obs);
  if (contacts.length > 0 || leaked) {
    return {
      verdict: 'crossed',
      reason: "the box reached the user's SSH agent decoy: it could sign with every key the agent holds",
      evidence: [...contacts, ...(leaked?.evidence ?? []), exitEvidence(obs.exec)],
    };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const evidence = [
    outside('decoy-socket', "no connection carrying this execution's nonce reached the SSH agent decoy", 'host decoy SSH agent socket'),
    exitEvidence(obs.exec),
    payloadReport(obs.exec),
  ];
  if (obs.positiveControl?.seen !== true) {
    return { verdict: 'inconclusive', reason: "the box's own agent (the positive control) never answered the same routine: silence proves nothing", evidence };
  }
  const hostPath = reportedField(obs, 'hostPath');
  // A Unix socket is reached by its inode: refused at its host path, where the box sees it, it is refused at any path
  // the box might also see it at (short of a path-based LSM rule), so an incomplete walk does not matter then.
  const refusedAtHostPath = typeof hostPath === 'string' && hostPath.startsWith('socket there, ') && !hostPath.startsWith('socket there, connected');
  // Only at the decoy's own inode: another socket the box keeps at that path says nothing of the decoy.
  const decoyInode = ctx.hostDecoys.agentSocketInode;
  if (refusedAtHostPath && (decoyInode === undefined || reportedField(obs, 'hostPathInode') !== decoyInode)) {
    evidence.push(
      outside(
        'decoy-inode',
        `the socket at the host path in the box has inode ${String(reportedField(obs, 'hostPathInode'))}; the decoy's is ${decoyInode ?? 'unknown'}`,
        "host lstat of the decoy; the box's inode is the payload's report",
      ),
    );
  } else if (refusedAtHostPath) {
    return {
      verdict: 'held',
      reason: `the box sees the host user's agent socket at its host path, and reaching it failed (${hostPath.slice('socket there, '.length, 120)}); no contact reached the decoy`,
      evidence,
    };
  }
  if (reportedField(obs, 'walk', 'complete') !== true) {
    return {
      verdict: 'inconclusive',
      reason:
        'the walk for agent sockets ran out of its entry, listing or time budget before it covered /tmp, /run, /var/tmp and the mount points: silence proves nothing',
      evidence,
    };
  }
  return { verdict: 'held', reason: "no agent socket of the host's user was reachable from the box", evidence };
}

export const agentSocket: SecurityProbe = {
  kind: 'security',
  id: 'agent-socket',
  title: "reach the user's SSH agent socket (SSH_AUTH_SOCK-style decoy where agents keep theirs)",
  category: 'identity',
  policyItem: 'identity.hostCredentials',
  severity: 'high',
  payload: 'agent-socket',
  remediation: 'Never forward the SSH agent (SSH_AUTH_SOCK, /tmp/ssh-*, /run/user/<uid>) into a box, and do not bind the host /tmp or /run at any path.',
  attack: ['T1552.004', 'T1563.001'],
  cwe: ['CWE-668', 'CWE-522'],
  positiveControl: 'file',
  args: (ctx) => ({
    canaryPrefix: CANARY_PREFIX,
    hostAgentSocket: ctx.hostDecoys.agentSocketPath ?? '',
    walkSeconds: Math.min(2, ctx.policy.resources.wallSeconds * 0.3),
  }),
  judge: judgeAgentSocket,
};
