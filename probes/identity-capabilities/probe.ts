import type { SecurityProbe } from '../../model/probe.js';
import { identityBase as base } from '../_shared/identity-base.js';
import { judgeHostIdentity, withCapabilities } from '../_shared/identity.js';

export const identityCapabilities: SecurityProbe = {
  ...base,
  id: 'identity-capabilities',
  title: 'effective capabilities of the box as the host sees them',
  severity: 'high',
  remediation: 'Drop every capability (--cap-drop ALL) for the box.',
  attack: ['T1611'],
  cwe: ['CWE-250', 'CWE-269'],
  judge: (obs, ctx) => judgeHostIdentity(obs, ctx, 'an empty effective capability set', withCapabilities),
};
