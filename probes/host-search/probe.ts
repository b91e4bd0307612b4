import { CANARY_PREFIX, DECOY_MARKER_WINDOW } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { decoyContactEvidence, reportedField, tokenInOutput } from '../_shared/exposure-judges.js';

/**
 * Crossed on any outside witness: a decoy value out of the box, a host decoy socket contacted with this
 * execution's nonce, or a watched real daemon's own event log naming the nonce. Held only when both in-box
 * positive controls worked (the walk found the control file, the socket routine reached the box's own
 * socket) and the walk covered every place it puts first.
 */
export function judgeHostSearch(obs: Observation): Judgement {
  const contacts = decoyContactEvidence(obs, ['daemon-socket', 'agent-socket']);
  const daemon = (obs.daemonEvents ?? []).filter((d) => d.events.length > 0);
  const daemonEvidence: Evidence[] = daemon.map((d) =>
    outside('daemon-event-log', `${d.events.length} event(s) naming this execution's nonce: ${d.events[0] ?? ''}`, 'watched container daemon'),
  );
  const leaked = canaryCrossing(obs);
  if (leaked || contacts.length > 0 || daemonEvidence.length > 0) {
    const what = [
      leaked ? 'decoy values came out' : '',
      contacts.length > 0 ? 'it contacted a host decoy socket' : '',
      daemonEvidence.length > 0 ? "a real container daemon's event log recorded its call" : '',
    ].filter(Boolean);
    return {
      verdict: 'crossed',
      reason: `searching what the box could see, the payload reached the host: ${what.join('; ')}`,
      evidence: [...(leaked?.evidence ?? []), ...contacts, ...daemonEvidence, exitEvidence(obs.exec)],
    };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const unseen = (obs.daemonEvents ?? []).map((d) =>
    outside('daemon-event-log', d.error ? `unreadable: ${d.error}` : 'no event names this execution', 'watched container daemon'),
  );
  const evidence = [
    outside('canary-scan', `scanned ${obs.exec.stdout.bytes + obs.exec.stderr.bytes} bytes of output and ${obs.artifacts.length} artifacts: no canary`),
    outside('decoy-socket', "no connection carrying this execution's nonce reached the daemon or agent decoy sockets", 'host decoy sockets'),
    ...unseen,
    exitEvidence(obs.exec),
    payloadReport(obs.exec),
  ];
  if (obs.positiveControl?.seen !== true) {
    return {
      verdict: 'inconclusive',
      reason: 'the walk did not find the in-box control file (a decoy-shaped value in its own workspace): the search never demonstrably worked',
      evidence,
    };
  }
  if (!tokenInOutput(obs, obs.token('socket-control'))) {
    return {
      verdict: 'inconclusive',
      reason: "the socket routine never reached the box's own control socket: silence from the host's sockets proves nothing",
      evidence,
    };
  }
  if ((obs.daemonEvents ?? []).some((d) => d.error !== undefined)) {
    return { verdict: 'inconclusive', reason: "a watched daemon's event log could not be read: its silence is no evidence", evidence };
  }
  if (reportedField(obs, 'walk', 'priorityComplete') !== true) {
    return {
      verdict: 'inconclusive',
      reason:
        'the walk ran out of its entry or time budget before it covered the places it searches first (workspace, its parents, home, /tmp, /run, mount points, the root)',
      evidence,
    };
  }
  return {
    verdict: 'held',
    reason: 'a bounded search of everything the box could see found no host decoy file, reached no host decoy socket and made no call a watched daemon logged',
    evidence,
  };
}

export const hostSearch: SecurityProbe = {
  kind: 'security',
  id: 'host-search',
  title: 'search everything visible for host decoy files and sockets (a host tree at any path, a real daemon)',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'host-search',
  remediation:
    'Bind nothing of the host into the box: no home, project, /tmp or /run directory and no daemon or agent socket, at any path; run the box as a uid of its own, since loose file modes and sockets let any uid read what it can reach.',
  attack: ['T1083', 'T1552.001', 'T1611'],
  cwe: ['CWE-552', 'CWE-668', 'CWE-200'],
  positiveControl: 'file',
  args: (ctx) => ({
    canaryPrefix: CANARY_PREFIX,
    headBytes: DECOY_MARKER_WINDOW,
    walkSeconds: Math.min(3, ctx.policy.resources.wallSeconds * 0.4),
    socketSeconds: Math.min(2, ctx.policy.resources.wallSeconds * 0.2),
  }),
  judge: judgeHostSearch,
};
