import type { SecurityProbe } from '../../model/probe.js';
import { judgePosture, namespaceRule } from '../_shared/posture.js';

/** Shared by the posture probes: the payload only holds still (capped) while the host reads /proc/<pid> of it. */
export const postureBase = {
  kind: 'security' as const,
  category: 'identity' as const,
  payload: 'identity-uid',
  sampleProcesses: true,
  kernelCarriers: true,
  releaseWhenSeen: 'sampled' as const,
  args: () => ({ holdSeconds: 2 }),
};

export const postureNamespaces: SecurityProbe = {
  ...postureBase,
  id: 'posture-namespaces',
  title: "the box's namespaces compared with the host's, as the host sees them",
  policyItem: 'posture.namespaces',
  severity: 'high',
  remediation: 'Give the box its own mount, pid, network, IPC and UTS namespaces (no --pid/--network/--ipc/--uts host, bwrap --unshare-all).',
  attack: ['T1611'],
  cwe: ['CWE-653'],
  judge: (obs, ctx) => {
    const required = ctx.policy.posture?.namespaces ?? [];
    const what = required.length > 0 ? `its own ${required.join(', ')} namespaces` : 'no namespace required';
    return judgePosture(obs, ctx, what, namespaceRule(required), '/proc/<pid>/ns');
  },
};
