import type { SecurityProbe } from '../../model/probe.js';
import { judgeHostIdentity, mayGainPrivileges, rootOnHost, withCapabilities } from '../_shared/identity.js';

const base = {
  kind: 'security' as const,
  category: 'identity' as const,
  policyItem: 'identity.unprivileged' as const,
  payload: 'identity-uid',
  sampleProcesses: true,
  kernelCarriers: true,
  releaseWhenSeen: 'sampled' as const,
  args: () => ({ holdSeconds: 2 }),
};

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
