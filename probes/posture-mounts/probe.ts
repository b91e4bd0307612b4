import type { SecurityProbe } from '../../model/probe.js';
import { mountRule } from '../_shared/posture-mounts.js';
import { judgePosture, runPlaces } from '../_shared/posture.js';
import { postureBase } from '../posture-namespaces/probe.js';

export const postureMounts: SecurityProbe = {
  ...postureBase,
  category: 'files',
  id: 'posture-mounts',
  title: 'host paths, sockets and kernel filesystems mounted in the box, from its mountinfo as the host sees it',
  policyItem: 'posture.hostMounts',
  severity: 'high',
  remediation:
    'Bind in only the workspace and read-only system software; no host sockets, no writable /proc/sys, /sys or cgroup filesystems (drop Binds, Privileged, --bind / ...).',
  attack: ['T1611', 'T1552.001'],
  cwe: ['CWE-668', 'CWE-552'],
  judge: (obs, ctx) => {
    const hostMounts = ctx.policy.posture?.hostMounts;
    const places = runPlaces(ctx);
    const rule = mountRule({ ...places, policy: hostMounts === undefined || hostMounts === 'any' ? 'none' : hostMounts });
    return judgePosture(
      obs,
      ctx,
      "no host path beyond the runtime's own and the policy's allowlist, no host socket, no writable kernel filesystem",
      rule,
      '/proc/<pid>/mountinfo',
      { fileServers: true },
    );
  },
};
