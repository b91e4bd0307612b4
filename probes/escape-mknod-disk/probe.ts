import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../harness/model/probe.js';
import { judgeEscape } from '../_shared/escapes.js';
import { decoyTarget, fsLocation, hostCannotOpen, onBlockDevice, physicalOffsetOf } from '../_shared/escapes-host.js';

/** EPERM: no CAP_MKNOD, or the device cgroup refuses the disk; EACCES: a nodev mount; EROFS: nowhere writable; ENOSYS: refused by the box's kernel. */
const REFUSALS = new Set(['EPERM', 'EACCES', 'EROFS', 'ENOSYS', 'ENXIO', 'ENODEV']);

export const escapeMknodDisk: SecurityProbe = {
  kind: 'security',
  id: 'escape-mknod-disk',
  title: "create a device node of the host's disk and read a host decoy from the raw device",
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'escape-mknod-disk',
  remediation: 'Drop CAP_MKNOD, keep the device cgroup denying block devices, and mount every writable place in the box nodev.',
  attack: ['T1611', 'T1006'],
  cwe: ['CWE-250', 'CWE-732'],
  positiveControl: 'file',
  hostPrecondition: (ctx) => {
    const { path } = decoyTarget(ctx);
    const loc = fsLocation(path);
    if (!onBlockDevice(loc)) return `the decoy directory is not on a block-device filesystem here (${loc ? `${loc.fstype} ${loc.source}` : 'unknown'}): there is no disk node to make on this machine`;
    const closed = loc ? hostCannotOpen(loc) : undefined;
    if (closed !== undefined) return `the host itself cannot open its disk ${loc?.source} (${closed}): the raw device is closed to every process, so no box can read it on this machine`;
    const place = physicalOffsetOf(path);
    return 'error' in place ? `the decoy's place on the disk is unknown (${place.error})` : undefined;
  },
  args: (ctx) => {
    const { path } = decoyTarget(ctx);
    const loc = fsLocation(path);
    const place = physicalOffsetOf(path);
    return { major: loc?.major ?? 0, minor: loc?.minor ?? 0, offset: 'error' in place ? 0 : place.offset, canaryPrefix: CANARY_PREFIX };
  },
  judge: (obs) =>
    judgeEscape(obs, {
      what: "make a node of the host's disk and read a host decoy from it",
      decisive: ['mknod-read'],
      refusals: REFUSALS,
      control: 'no CAP_MKNOD, a device cgroup without the disk, or nodev mounts',
    }),
};
