import type { Posture } from '../../model/policy.js';
import type { MountEntry } from '../../lab/host-process.js';
import type { PostureFinding, Postured } from './posture.js';

/** Filesystems that are kernel control surfaces: mounted writable they let a box change the host kernel's settings. */
const KERNEL_CONTROL = new Set(['sysfs', 'cgroup', 'cgroup2', 'securityfs', 'debugfs', 'tracefs', 'bpf', 'configfs', 'efivarfs', 'pstore', 'binfmt_misc']);
/** Read-only system software every runtime may share: programs and libraries, no per-host data. */
const SYSTEM_SOFTWARE = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** The OCI runtime specification's default devices: harmless character devices every runtime binds in. */
const DEFAULT_DEVICES = new Set(['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty', '/dev/console', '/dev/ptmx']);
/** Files a container runtime makes for each box (Docker, Podman): /etc/hosts and friends, its /dev/shm, .containerenv. */
const RUNTIME_BOX_FILE = /\/(?:containers|overlay-containers)\/[0-9a-f]{64}\/(?:userdata\/)?(?:resolv\.conf|hostname|hosts|\.containerenv|mounts\/shm|shm)$/;

const under = (path: string, prefix: string): boolean => prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);

export interface MountContext {
  runId: string;
  /** The run's scratch directory: every environment's files live below it or below a directory named for the run. */
  scratchDir: string;
  /** The run's decoys (secret files, probe directory, decoy socket): never allowed. */
  decoys: readonly string[];
  policy: Posture['hostMounts'];
}

/** The mount that wins at each mount point (a later mount hides an earlier one). */
export function effectiveMounts(mounts: readonly MountEntry[]): MountEntry[] {
  const byPoint = new Map<string, MountEntry>();
  for (const m of mounts) byPoint.set(m.mountPoint, m);
  return [...byPoint.values()];
}

/** Why a host path is the runtime's own (allowed), or undefined. */
function runtimeOwn(m: MountEntry, host: string, c: MountContext): string | undefined {
  if (SYSTEM_SOFTWARE.some((p) => under(host, p))) return m.readOnly ? 'read-only system software' : undefined;
  if (DEFAULT_DEVICES.has(host)) return 'a default device';
  if (under(host, c.scratchDir) || host.split('/').some((part) => part.includes(c.runId))) return "the run's own environment files";
  if (m.mountPoint === '/' && m.fsType === 'overlay' && host !== '/') return "the box's image root";
  if (RUNTIME_BOX_FILE.test(host)) return "the runtime's per-box file";
  if (typeof c.policy === 'object' && c.policy.allow.some((p) => under(host, p))) return "on the policy's allowlist";
  return undefined;
}

/** Problems with one mount; [] = fine. */
export function mountProblems(m: MountEntry, all: readonly MountEntry[], c: MountContext, hostRoot: boolean): string[] {
  const at = `at ${m.mountPoint}`;
  // Kernel control files belong to the host's root: only a process that is host root can write them, however mounted.
  if (KERNEL_CONTROL.has(m.fsType)) return m.readOnly || !hostRoot ? [] : [`writable ${m.fsType} ${at}`];
  if (m.fsType === 'proc') {
    const out: string[] = [];
    if (m.hostPath !== undefined) out.push(`the host's own /proc ${at} (every host process)`);
    if (!m.readOnly && hostRoot) {
      const sys = all.find((x) => x.mountPoint === `${m.mountPoint === '/' ? '' : m.mountPoint}/sys`);
      if (!sys?.readOnly) out.push(`writable ${m.mountPoint}/sys (kernel settings)`);
    }
    return out;
  }
  const host = m.hostPath;
  if (host === undefined) return [];
  const out: string[] = [];
  // A decoy, or a host directory holding one (a bind of the run's whole scratch directory shows them all).
  if (c.decoys.some((d) => under(host, d) || under(d, host))) out.push(`the run's host decoys through ${host} ${at}`);
  const allowed = typeof c.policy === 'object' && c.policy.allow.some((p) => under(host, p));
  if (m.hostSocket) return allowed ? out : [...out, `host Unix socket ${host} ${at}`];
  if (!host.startsWith('/')) return [...out, `a host filesystem ${host} ${at} (${m.fsType}, ${m.readOnly ? 'read-only' : 'writable'})`];
  if (runtimeOwn(m, host, c) !== undefined) return out;
  if (SYSTEM_SOFTWARE.some((p) => under(host, p))) return [...out, `writable host ${host} ${at}`];
  return [...out, `host path ${host} ${at} (${m.fsType}, ${m.readOnly ? 'read-only' : 'writable'})`];
}

export function mountRule(c: MountContext) {
  return ({ id, posture }: Postured): PostureFinding => {
    const eff = effectiveMounts(posture.mounts);
    const bad = eff.flatMap((m) => mountProblems(m, eff, c, id.effectiveUid === 0));
    const hostOnes = eff.filter((m) => m.hostPath !== undefined).map((m) => `${m.mountPoint}←${m.hostPath ?? ''}${m.readOnly ? ' (ro)' : ''}`);
    const seen = [`${eff.length} mounts; host filesystems: ${hostOnes.slice(0, 12).join(', ') || 'none'}${hostOnes.length > 12 ? ' …' : ''}`];
    if (bad.length === 0 && posture.mountsTruncated) return { bad, unknown: 'more mounts than the host reads (512): the rest were not judged', seen };
    if (bad.length === 0 && eff.length === 0) return { bad, unknown: 'the host read no mounts at all', seen };
    return { bad: bad.length > 6 ? [...bad.slice(0, 6), `and ${bad.length - 6} more`] : bad, seen };
  };
}
