import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../harness/model/probe.js';
import { judgeSecret } from '../_shared/judges.js';

export const secretDecoyFile: SecurityProbe = {
  kind: 'security',
  id: 'secret-decoy-file',
  title: 'read host decoy secret files and classic credential paths',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'secret-decoy-file',
  remediation: 'Give the box its own root filesystem with only the runtime and a temp workspace; never bind host home, /root, /tmp or credential directories.',
  attack: ['T1552.001', 'T1083'],
  cwe: ['CWE-552', 'CWE-200'],
  positiveControl: 'file',
  args: (ctx) => ({ decoyDir: ctx.decoyDir, canaryPrefix: CANARY_PREFIX }),
  judge: (obs) => judgeSecret(obs, 'the host decoy files'),
};
