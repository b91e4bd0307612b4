import { programMark } from '../../lab/kernel-carriers.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeKernelIdentity, KERNEL_HOLD_SECONDS } from '../_shared/posture-kernel.js';

export const kernelIdentity: SecurityProbe = {
  kind: 'security',
  id: 'kernel-identity',
  title: "whether the box runs on the host's kernel, judged from the host",
  category: 'identity',
  policyItem: 'isolation.separateKernel',
  severity: 'medium',
  payload: 'kernel-identity',
  remediation:
    'Where the policy requires a separate kernel, run the box in a micro VM or a user-space kernel (Firecracker, Kata, gVisor) instead of a container on the host kernel.',
  attack: ['T1611', 'T1068'],
  cwe: ['CWE-653'],
  sampleProcesses: true,
  watchSurvivor: true,
  // On a user-space kernel the host looks for the payload's address space (by the nonce) and its child's (by the mark).
  kernelCarriers: 'marked-program',
  // Released by the scan that must see the marked child, never by the sampler (which would race it).
  releaseWhenSeen: 'marked',
  // The mark, not the child's whole name: a launcher's command line carries the payload's arguments.
  args: (ctx) => ({ holdSeconds: KERNEL_HOLD_SECONDS, mark: programMark(ctx.nonce) }),
  judge: (obs, ctx) => judgeKernelIdentity(obs, ctx),
};
