import type { SecurityProbe } from '../../model/probe.js';
import { deviceRule, judgePosture } from '../_shared/posture.js';
import { postureBase } from '../posture-namespaces/probe.js';

export const postureDevices: SecurityProbe = {
  ...postureBase,
  category: 'files',
  id: 'posture-devices',
  title: "host disks reachable through the box's /dev and device cgroup, as the host sees them",
  policyItem: 'posture.devices',
  severity: 'high',
  remediation: 'No host devices (no Privileged, no --device of a disk), no CAP_MKNOD or CAP_SYS_ADMIN, and a device cgroup that refuses block devices.',
  attack: ['T1006', 'T1611'],
  cwe: ['CWE-668'],
  judge: (obs, ctx) => judgePosture(obs, ctx, 'no host disk reachable', deviceRule, '/proc/<pid>/root/dev, devices.list', { fileServers: true }),
};
