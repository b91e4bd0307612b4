import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeSecret } from '../_shared/judges.js';

export const decoyProcessEnviron: SecurityProbe = {
  kind: 'security',
  id: 'decoy-process-environ',
  title: 'read the environment of a host process holding a credential',
  category: 'identity',
  policyItem: 'identity.hostCredentials',
  severity: 'critical',
  payload: 'decoy-process-environ',
  remediation: 'Use a private PID namespace (host processes invisible) and an unprivileged uid.',
  attack: ['T1552', 'T1057'],
  cwe: ['CWE-214', 'CWE-668'],
  positiveControl: 'env',
  hostDecoyProcess: true,
  args: (ctx) => ({ pid: ctx.hostDecoys.processPid, canaryPrefix: CANARY_PREFIX }),
  judge: (obs) => judgeSecret(obs, '/proc/<pid>/environ of a host decoy process', /^(?:environ|cmdline) of (?:self|decoy): .*$/gm),
};
