import type { SecurityProbe } from '../../model/probe.js';
import { CREDENTIAL_PATHS, MAX_HASHED_BYTES, hostPreconditionFor, judgeCredentialPaths, payloadSource } from './judge.js';

export const hostCredentialPaths: SecurityProbe = {
  kind: 'security',
  id: 'host-credential-paths',
  title:
    "read the classic credential paths (/etc/shadow, root's SSH, cloud, Docker and kube credentials, host keys, pid 1's environment), judged against the host's own files",
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'host-credential-paths',
  remediation:
    "Give the box its own root filesystem (never the host's /etc, /root or home directories, even read-only), a non-root uid, and its own PID namespace so /proc/1 is the box's own.",
  attack: ['T1552.001', 'T1003.008'],
  cwe: ['CWE-552', 'CWE-200'],
  sampleProcesses: true,
  releaseWhenSeen: 'sampled',
  rootPaths: CREDENTIAL_PATHS,
  hostPrecondition: () => hostPreconditionFor('/', CREDENTIAL_PATHS),
  args: () => ({ paths: CREDENTIAL_PATHS, maxBytes: MAX_HASHED_BYTES, holdSeconds: 2 }),
  judge: (obs, ctx) => judgeCredentialPaths(obs, ctx, { hostRoot: '/', paths: CREDENTIAL_PATHS, payloadBytes: payloadSource }),
};
