import type { SecurityProbe } from '../../model/probe.js';
import { capabilityRule, judgePosture } from '../_shared/posture.js';
import { postureBase } from '../posture-namespaces/probe.js';

export const postureCapabilities: SecurityProbe = {
  ...postureBase,
  id: 'posture-capabilities',
  title: 'dangerous capabilities in the bounding set and ambient capabilities of the box, as the host sees them',
  policyItem: 'posture.capabilityBounding',
  severity: 'high',
  remediation:
    'Empty the bounding set (--cap-drop ALL, setpriv --bounding-set=-all) and never add CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE or CAP_NET_RAW.',
  attack: ['T1611', 'T1068'],
  cwe: ['CWE-250', 'CWE-269'],
  judge: (obs, ctx) =>
    judgePosture(obs, ctx, 'no dangerous capability in the bounding set and none ambient (over the host user namespace)', capabilityRule, '/proc/<pid>/status'),
};
