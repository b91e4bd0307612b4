import type { SecurityProbe } from '../../model/probe.js';
import { identityBase as base } from '../_shared/identity-base.js';
import { judgeHostIdentity, mayGainPrivileges } from '../_shared/identity.js';

export const identityNoNewPrivs: SecurityProbe = {
  ...base,
  id: 'identity-no-new-privs',
  title: 'no_new_privs set on the box',
  severity: 'medium',
  remediation: 'Set no_new_privs (no-new-privileges) so setuid binaries and file capabilities cannot raise privileges.',
  attack: ['T1548.001'],
  cwe: ['CWE-269'],
  judge: (obs, ctx) => judgeHostIdentity(obs, ctx, 'no_new_privs set', mayGainPrivileges),
};
