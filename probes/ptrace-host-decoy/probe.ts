import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeSecret } from '../_shared/judges.js';

export const ptraceHostDecoy: SecurityProbe = {
  kind: 'security',
  id: 'ptrace-host-decoy',
  title: 'ptrace a host process and read a credential from its memory',
  category: 'identity',
  policyItem: 'identity.hostCredentials',
  severity: 'critical',
  payload: 'ptrace-host-decoy',
  remediation: 'Give the box its own PID namespace and an unprivileged uid without CAP_SYS_PTRACE; host processes must be invisible.',
  attack: ['T1055.008', 'T1003.007'],
  cwe: ['CWE-250', 'CWE-668'],
  positiveControl: 'env',
  hostDecoyProcess: true,
  args: (ctx) => ({ pid: ctx.hostDecoys.processPid, canaryPrefix: CANARY_PREFIX }),
  judge: (obs) => judgeSecret(obs, 'the memory of a host decoy process', /^found in .+ memory: .*$/gm),
};
