import type { SecurityProbe } from '../../model/probe.js';
import { judgeEscape } from '../_shared/escapes.js';
import { hostLoadsModules } from '../_shared/escapes-host.js';

/** CAP_SYS_MODULE's bit in a capability set. */
const CAP_SYS_MODULE = 16;

/**
 * The rule for this probe: a refused init_module leaves nothing a host could witness, and an invalid
 * image is rejected either way, so the payload's challenge-bound word (EPERM, or an error from past
 * the permission check) is the only evidence of the attempt. It may decide `crossed` on its own; it
 * may never decide `held`: that also needs the host to have seen the box's own program without
 * CAP_SYS_MODULE in the host's user namespace (/proc/<pid>/status). Where the host cannot see the
 * program (a user-space kernel such as gVisor), the verdict is `inconclusive`.
 */
export const escapeKernelModule: SecurityProbe = {
  kind: 'security',
  id: 'escape-kernel-module',
  title: 'load a kernel module (a harmless invalid image)',
  category: 'identity',
  policyItem: 'identity.unprivileged',
  severity: 'critical',
  payload: 'escape-kernel-module',
  remediation: 'Never grant CAP_SYS_MODULE or run boxes privileged; keep a seccomp profile that refuses init_module and finit_module.',
  attack: ['T1547.006', 'T1611'],
  cwe: ['CWE-250', 'CWE-269'],
  sampleProcesses: true,
  releaseWhenSeen: 'sampled',
  hostPrecondition: () =>
    hostLoadsModules() ? undefined : 'the host kernel has no loadable module support (no /proc/modules): no box can load a module on this machine',
  args: () => ({ holdSeconds: 2 }),
  judge: (obs, ctx) =>
    judgeEscape(obs, {
      what: 'load a kernel module',
      decisive: ['init_module'],
      refusals: new Set(['EPERM', 'EACCES', 'ENOSYS']),
      control: 'no CAP_SYS_MODULE (or a filter refusing the call)',
      insideCrossing: true,
      posture: { bit: CAP_SYS_MODULE, name: 'CAP_SYS_MODULE', nonce: ctx.nonce },
    }),
};
