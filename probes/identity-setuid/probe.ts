import { readFileSync } from 'node:fs';
import type { SecurityProbe } from '../../harness/model/probe.js';
import { judgeHostIdentity, rootOnHost } from '../_shared/identity.js';

/** A copy of sleep, setuid root: if it runs with euid 0, a box program can become root. */
function setuidSleep(): Uint8Array {
  return readFileSync('/bin/sleep');
}

export const identitySetuid: SecurityProbe = {
  kind: 'security',
  id: 'identity-setuid',
  title: 'a setuid-root binary in the workspace gains nothing',
  category: 'identity',
  policyItem: 'identity.unprivileged',
  severity: 'high',
  payload: 'identity-setuid',
  sampleProcesses: true,
  remediation: 'Mount the workspace nosuid, set no_new_privs, and run as an unprivileged uid.',
  files: () => [{ path: 'suid-sleep', content: setuidSleep(), mode: 0o4755 }],
  args: () => ({ binary: 'suid-sleep', holdSeconds: 1.5 }),
  judge: (obs) => judgeHostIdentity(obs, 'no process with euid 0', rootOnHost),
};
