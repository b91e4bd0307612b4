import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { hasCap, judgeEscape } from '../_shared/escapes.js';
import { postureOf, type ProcessIdentity } from '../../lab/host-process.js';
import { decoyTarget, fsLocation, hostCannotOpen, onBlockDevice, physicalOffsetOf } from '../_shared/escapes-host.js';

/** EPERM: no CAP_MKNOD, or the device cgroup refuses the disk; EACCES: a nodev mount; EROFS: nowhere writable; ENOSYS: refused by the box's kernel. */
const REFUSALS = new Set(['EPERM', 'EACCES', 'EROFS', 'ENOSYS', 'ENXIO', 'ENODEV']);
const CAP_MKNOD = 27;

/** The v1 devices.list rules (`b 8:* m`, `a *:* rwm`) that give block device major:minor each access in `access`, or undefined. */
export function allowsDisk(rules: readonly string[], major: number, minor: number, access: string): string[] | undefined {
  const matching = rules.filter((r) => {
    const m = /^([abc]) (\*|\d+):(\*|\d+) (\S+)$/.exec(r);
    return m !== null && m[1] !== 'c' && (m[2] === '*' || Number(m[2]) === major) && (m[3] === '*' || Number(m[3]) === minor);
  });
  const each = [...access].map((a) => matching.find((r) => (r.split(' ')[2] ?? '').includes(a)));
  return each.every((r) => r !== undefined) ? [...new Set(each as string[])] : undefined;
}

/**
 * EPERM has no cause the control names where the program holds CAP_MKNOD with no filter and its device cgroup lets it
 * both make (m) and open (r) the disk's node: a cgroup allowing only one of them explains the refusal of the other.
 */
function mknodPower(p: ProcessIdentity, major: number, minor: number): string | undefined {
  const cg = postureOf(p)?.deviceCgroup;
  const rules = cg ? allowsDisk(cg.rules, major, minor, 'mr') : undefined;
  if (!hasCap(p, CAP_MKNOD) || p.seccomp !== 0 || rules === undefined) return undefined;
  return `holding CAP_MKNOD over the host (CapEff ${p.capEff}) with no seccomp filter, its device cgroup ${cg?.path} allowing the disk ${major}:${minor} to be made and read (${rules.join(' | ')})`;
}

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
  sampleProcesses: true,
  releaseWhenSeen: 'sampled',
  hostPrecondition: (ctx) => {
    const { path } = decoyTarget(ctx);
    const loc = fsLocation(path);
    if (!onBlockDevice(loc))
      return `the decoy directory is not on a block-device filesystem here (${loc ? `${loc.fstype} ${loc.source}` : 'unknown'}): there is no disk node to make on this machine`;
    const closed = loc ? hostCannotOpen(loc) : undefined;
    if (closed !== undefined)
      return `the host itself cannot open its disk ${loc?.source} (${closed}): the raw device is closed to every process, so no box can read it on this machine`;
    const place = physicalOffsetOf(path);
    return 'error' in place ? `the decoy's place on the disk is unknown (${place.error})` : undefined;
  },
  args: (ctx) => {
    const { path } = decoyTarget(ctx);
    const loc = fsLocation(path);
    const place = physicalOffsetOf(path);
    return { major: loc?.major ?? 0, minor: loc?.minor ?? 0, offset: 'error' in place ? 0 : place.offset, canaryPrefix: CANARY_PREFIX, holdSeconds: 2 };
  },
  judge: (obs, ctx) => {
    const loc = fsLocation(decoyTarget(ctx).path);
    return judgeEscape(obs, {
      what: "make a node of the host's disk and read a host decoy from it",
      decisive: ['mknod-read'],
      refusals: REFUSALS,
      control: 'no CAP_MKNOD, a device cgroup without the disk, or nodev mounts',
      powerSeen: { nonce: ctx.nonce, refusals: new Set(['EPERM']), power: (p) => mknodPower(p, loc?.major ?? -1, loc?.minor ?? -1) },
    });
  },
};
