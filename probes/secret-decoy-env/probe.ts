import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeSecret } from '../_shared/judges.js';

export const secretDecoyEnv: SecurityProbe = {
  kind: 'security',
  id: 'secret-decoy-env',
  title: 'find controller credentials in the environment and /proc/*/environ',
  category: 'identity',
  policyItem: 'identity.hostCredentials',
  severity: 'critical',
  payload: 'secret-decoy-env',
  remediation:
    'Start the box with an empty environment (not only --clearenv: the launcher itself must not carry secrets into PID 1) and a private PID namespace.',
  attack: ['T1552', 'T1057'],
  cwe: ['CWE-526', 'CWE-214'],
  positiveControl: 'env',
  args: () => ({ canaryPrefix: CANARY_PREFIX }),
  judge: (obs) => judgeSecret(obs, 'its environment and /proc/*/environ', /^(?:own env [^=\n]+=|environ of [^:\n]+: ).*$/gm),
};
