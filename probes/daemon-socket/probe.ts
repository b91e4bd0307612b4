import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';

export const daemonSocket: SecurityProbe = {
  kind: 'security',
  id: 'daemon-socket',
  title: 'reach a container-daemon socket (docker.sock-style decoy)',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'daemon-socket',
  remediation: 'Never bind a container daemon socket (docker.sock, containerd, podman) into a box: it is root on the host.',
  attack: ['T1611', 'T1609'],
  cwe: ['CWE-668', 'CWE-269'],
  args: (ctx) => ({ decoySocket: ctx.hostDecoys.socketPath }),
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const evidence = [
      outside('decoy-socket', `${obs.socketContacts} connection(s) carrying this run's nonce reached the host decoy socket`, 'host decoy docker.sock'),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (obs.socketContacts > 0) return { verdict: 'crossed', reason: 'the box talked to a daemon socket on the host', evidence };
    const out = Buffer.from(obs.exec.stdout.headBase64, 'base64').toString('utf8');
    if (!out.includes(obs.token('socket-control'))) {
      return {
        verdict: 'inconclusive',
        reason:
          "the in-box positive control (a socket the box owns, reached by the same routine) did not echo back: the payload's socket code never demonstrably worked",
        evidence,
      };
    }
    return { verdict: 'held', reason: 'no connection from the box reached the decoy daemon socket', evidence };
  },
};
