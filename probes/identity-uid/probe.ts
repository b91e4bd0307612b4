import type { SecurityProbe } from '../../model/probe.js';
import { identityBase as base } from '../_shared/identity-base.js';
import { judgeHostIdentity, rootOnHost } from '../_shared/identity.js';

export const identityUid: SecurityProbe = {
  ...base,
  id: 'identity-uid',
  title: 'effective uid of the box as the host sees it',
  severity: 'high',
  remediation: 'Drop to an unprivileged host uid before starting the box (setpriv / USER); a uid inside a user namespace is not enough if the host sees 0.',
  attack: ['T1611'],
  cwe: ['CWE-250'],
  judge: (obs, ctx) => judgeHostIdentity(obs, ctx, 'a non-root effective uid', rootOnHost),
};
