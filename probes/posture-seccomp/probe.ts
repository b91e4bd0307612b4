import type { SecurityProbe } from '../../model/probe.js';
import { judgePosture, seccompRule } from '../_shared/posture.js';
import { postureBase } from '../posture-namespaces/probe.js';

export const postureSeccomp: SecurityProbe = {
  ...postureBase,
  id: 'posture-seccomp',
  title: 'a seccomp filter on the box, as the host sees it',
  policyItem: 'posture.seccomp',
  severity: 'medium',
  remediation: "Run the box under a seccomp filter (Docker's default profile, bwrap --seccomp, runtime-spec linux.seccomp); never seccomp=unconfined.",
  attack: ['T1611', 'T1068'],
  cwe: ['CWE-693'],
  // Seccomp 2 shows a filter is installed, not what it refuses: an allow-all filter is not caught here.
  judge: (obs, ctx) => judgePosture(obs, ctx, 'a seccomp filter (Seccomp 2)', seccompRule, '/proc/<pid>/status'),
};
