import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeEscape } from '../_shared/escapes.js';
import { decoyTarget, fsLocation, onBlockDevice } from '../_shared/escapes-host.js';

/** EPERM/EACCES: no CAP_SYS_ADMIN (unshare, mount) or no device access (device cgroup, nodev); ENOSYS: the box's kernel refuses the call. */
const REFUSALS = new Set(['EPERM', 'EACCES', 'ENOSYS', 'ENXIO', 'ENODEV']);

export const escapeMountHost: SecurityProbe = {
  kind: 'security',
  id: 'escape-mount-host',
  title: "mount the host's disk read-only and read a host decoy from it",
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'escape-mount-host',
  remediation: 'Never run boxes privileged or with CAP_SYS_ADMIN; expose no host block devices (device cgroup, no --device of disks).',
  attack: ['T1611', 'T1006'],
  cwe: ['CWE-250', 'CWE-269'],
  positiveControl: 'file',
  hostPrecondition: (ctx) => {
    const loc = fsLocation(decoyTarget(ctx).path);
    return onBlockDevice(loc)
      ? undefined
      : `the decoy directory is not on a block-device filesystem here (${loc ? `${loc.fstype} ${loc.source}` : 'unknown'}): a box has no disk to mount on this machine`;
  },
  args: (ctx) => {
    const loc = fsLocation(decoyTarget(ctx).path);
    return { major: loc?.major ?? 0, minor: loc?.minor ?? 0, fstype: loc?.fstype ?? '', pathInFs: loc?.pathInFs ?? '', canaryPrefix: CANARY_PREFIX };
  },
  judge: (obs) =>
    judgeEscape(obs, {
      what: "mount the host's disk and read a host decoy",
      decisive: ['mount-host-fs'],
      refusals: REFUSALS,
      control: 'no CAP_SYS_ADMIN or no access to the host disk device',
    }),
};
