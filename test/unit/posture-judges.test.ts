/**
 * Posture and kernel-identity judges: held only on the host's reads of the box's own program, never on the
 * box's word; and the ways a broken or lying box could try to earn a held.
 */
import { describe, expect, it } from 'vitest';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { Observation, ProbeContext } from '../../model/probe.js';
import { policyRequires } from '../../model/required-items.js';
import { attachPosture, hostPathOf, parseMountinfo, type MountEntry, type ProcessIdentity, type ProcessPosture } from '../../lab/host-process.js';
import { makeCanaries } from '../../lab/canaries.js';
import { judgeKernelIdentity } from '../../probes/_shared/posture-kernel.js';
import { postureCapabilities } from '../../probes/posture-capabilities/probe.js';
import { postureDevices } from '../../probes/posture-devices/probe.js';
import { postureMounts } from '../../probes/posture-mounts/probe.js';
import { postureNamespaces } from '../../probes/posture-namespaces/probe.js';
import { postureSeccomp } from '../../probes/posture-seccomp/probe.js';
import { identityUid } from '../../probes/identity-uid/probe.js';
import { identityCapabilities } from '../../probes/identity-capabilities/probe.js';
import { identityNoNewPrivs } from '../../probes/identity-no-new-privs/probe.js';
import { identitySetuid } from '../../probes/identity-setuid/probe.js';
import { capture, fakeObservation } from '../helpers/observation.js';

const ctx: ProbeContext = {
  policy: CI_POLICY,
  runId: 'rposture1',
  nonce: 'n0nce',
  canaries: makeCanaries(),
  decoyDir: '/tmp/sandcheck-rposture1-ab/decoys',
  hostDecoys: { processPid: 1, socketPath: '/tmp/sandcheck-rposture1-ab/decoy.sock' },
  hostProbeDir: '/tmp/sandcheck-rposture1-ab/probe-n0nce',
};

const identity = (over: Partial<ProcessIdentity> = {}): ProcessIdentity => ({
  pid: 42,
  command: 'python3',
  realUid: 65529,
  effectiveUid: 65529,
  capEff: '0000000000000000',
  noNewPrivs: 1,
  seccomp: 2,
  peakRssBytes: 1 << 20,
  hostUserNamespace: true,
  ...over,
});

const mount = (mountPoint: string, over: Partial<MountEntry> = {}): MountEntry => ({
  mountPoint,
  root: '/',
  device: '0:99',
  fsType: 'tmpfs',
  source: 'tmpfs',
  readOnly: false,
  noDevices: true,
  ...over,
});

/** What a hardened container looks like from the host. */
const goodPosture = (over: Partial<ProcessPosture> = {}): ProcessPosture => ({
  pid: 42,
  cmdline: 'python3 payload.py {"nonce": "n0nce", "probe": "posture"}',
  sharedNamespaces: { mnt: false, pid: false, net: false, ipc: false, uts: false, user: true, cgroup: true },
  capBnd: '0000000000000000',
  capAmb: '0000000000000000',
  mounts: [
    mount('/', { fsType: 'overlay', source: 'overlay', readOnly: true, hostPath: '/var/lib/docker/overlay2/abc/merged' }),
    mount('/proc', { fsType: 'proc', device: '0:50' }),
    mount('/proc/sys', { fsType: 'proc', device: '0:50', root: '/sys', readOnly: true }),
    mount('/sys', { fsType: 'sysfs', device: '0:51', readOnly: true }),
    mount('/dev', { device: '0:52', noDevices: false }),
    mount('/work', { fsType: 'ext4', device: '7:3', hostPath: '/run/sandcheck/docker-disk/rposture1-e1/fs/work' }),
    mount('/usr/lib/extra', { fsType: 'ext4', device: '254:0', hostPath: '/usr/lib', readOnly: true }),
  ],
  mountsTruncated: false,
  deviceCgroup: { path: '/docker/abc', rules: ['c 1:3 rwm', 'c 1:5 rwm', 'c 136:* rwm'] },
  devNodes: [],
  devEntriesSeen: 12,
  ...over,
});

/** An observation whose sampled process of the box's program has `posture` attached (as the sampler does). */
function observed(posture: ProcessPosture | undefined, id: ProcessIdentity = identity(), rest: Partial<Observation> = {}, report = ''): Observation {
  if (posture) attachPosture(id, posture);
  return fakeObservation({ hostProcesses: [id], hostProcessCountMax: 1, stdout: capture(report) }, { finished: true, ...rest });
}

const verdict = (probe: { judge(o: Observation, c: ProbeContext): { verdict: string; reason: string } }, o: Observation, c: ProbeContext = ctx): string => {
  const j = probe.judge(o, c);
  return `${j.verdict}: ${j.reason}`;
};

const POSTURE_PROBES = [postureNamespaces, postureMounts, postureSeccomp, postureCapabilities, postureDevices];

describe('posture judges', () => {
  it('hold on a hardened posture read from the host', () => {
    for (const p of POSTURE_PROBES) expect(verdict(p, observed(goodPosture())), p.id).toMatch(/^held: /);
  });

  it('never hold without the payload having run, without a process of its program, or without a posture read', () => {
    for (const p of POSTURE_PROBES) {
      expect(verdict(p, observed(goodPosture(), identity(), { attempted: false })), p.id).toMatch(/^inconclusive: no answer to this execution's challenge/);
      // gVisor: the backend names the sandbox's host processes, none of them runs the payload.
      expect(verdict(p, fakeObservation({ hostProcesses: [], hostProcessCountMax: 5 }, { finished: true })), p.id).toMatch(
        /^inconclusive: the backend named 5 host process/,
      );
      // A copied observation (or a sampler that read no posture) lost it: nothing can be held.
      expect(verdict(p, observed(undefined)), p.id).toMatch(/^inconclusive: the host could not read the posture/);
    }
  });

  it('ignore what the box says about itself: a report of Seccomp 2 and an empty bounding set changes nothing', () => {
    const report = 'SANDCHECK-REPORT {"status": {"Seccomp": "2", "CapBnd": "0000000000000000"}}\nBLOCKED\n';
    const root = identity({ effectiveUid: 0, realUid: 0, seccomp: 0, capEff: '000001ffffffffff' });
    const o = observed(goodPosture({ capBnd: '000001ffffffffff' }), root, {}, report);
    expect(verdict(postureSeccomp, o)).toMatch(/^crossed: python3 \(pid 42\) runs without a seccomp filter/);
    expect(verdict(postureCapabilities, o)).toMatch(/^crossed: .*CAP_SYS_ADMIN/);
  });

  it("a sampled process that is not this execution's payload (no nonce in its argv) decides nothing", () => {
    for (const p of POSTURE_PROBES)
      expect(verdict(p, observed(goodPosture({ cmdline: 'python3 -c pass' }))), p.id).toMatch(
        /^inconclusive: no process whose posture the host read carries this execution's nonce/,
      );
  });

  it('one bad sample among good ones crosses; an unreadable part is inconclusive, never held', () => {
    const good = identity({ pid: 42 });
    const bad = identity({ pid: 43 });
    attachPosture(good, goodPosture());
    attachPosture(bad, goodPosture({ pid: 43, sharedNamespaces: { ...goodPosture().sharedNamespaces, pid: true } }));
    const o = fakeObservation({ hostProcesses: [good, bad], hostProcessCountMax: 2 }, { finished: true });
    expect(verdict(postureNamespaces, o)).toMatch(/^crossed: python3 \(pid 43\) shares the host's pid namespace/);
    const unread = goodPosture({ sharedNamespaces: { mnt: false, pid: false } });
    expect(verdict(postureNamespaces, observed(unread))).toMatch(/^inconclusive: .*unreadable/);
    // Only what the policy requires is judged.
    const lax: ProbeContext = { ...ctx, policy: { ...CI_POLICY, posture: { ...CI_POLICY.posture!, namespaces: ['mnt'] } } };
    expect(verdict(postureNamespaces, observed(unread), lax)).toMatch(/^held: /);
  });

  it('capabilities: only over the host user namespace; any ambient capability crosses', () => {
    const inOwnUserNs = identity({ hostUserNamespace: false, effectiveUid: 0 });
    expect(verdict(postureCapabilities, observed(goodPosture({ capBnd: '000001ffffffffff' }), inOwnUserNs))).toMatch(/^held: /);
    expect(verdict(postureCapabilities, observed(goodPosture({ capBnd: '0000000000002000' })))).toMatch(/^crossed: .*CAP_NET_RAW/);
    expect(verdict(postureCapabilities, observed(goodPosture({ capBnd: '0000000000000400' })))).toMatch(/^held: /); // NET_BIND_SERVICE only
    expect(verdict(postureCapabilities, observed(goodPosture({ capAmb: '0000000000000400' })))).toMatch(/^crossed: .*ambient/);
    expect(verdict(postureCapabilities, observed(goodPosture({ capBnd: 'unknown' })))).toMatch(/^inconclusive: /);
  });

  it('seccomp: a missing field is inconclusive', () => {
    expect(verdict(postureSeccomp, observed(goodPosture(), identity({ seccomp: null })))).toMatch(/^inconclusive: /);
    expect(verdict(postureSeccomp, observed(goodPosture(), identity({ seccomp: 1 })))).toMatch(/^held: /);
  });

  describe('on a user-space kernel (gVisor): the host processes that carry the box are judged in its place', () => {
    /** What runsc looks like from the host: stubs and the Sentry in a user namespace of their own, the gofer root. */
    const carrier = (pid: number, over: Partial<ProcessIdentity> = {}, posture: Partial<ProcessPosture> = {}): ProcessIdentity => {
      const id = identity({ pid, command: 'exe', capEff: '0000000000240000', hostUserNamespace: false, ...over });
      attachPosture(
        id,
        goodPosture({
          pid,
          cmdline: '',
          sharedNamespaces: { mnt: false, pid: true, net: false, ipc: false, uts: false, user: false, cgroup: true },
          capBnd: '000001ffffffffff',
          mounts: [mount('/', { readOnly: true })],
          devEntriesSeen: 0,
          ownRoot: { entries: 2, blockNodes: 0, complete: true },
          deviceCgroup: { path: '/x', rules: ['a *:* rwm'] },
          ...posture,
        }),
      );
      return id;
    };
    const gofer = (posture: Partial<ProcessPosture> = {}): ProcessIdentity =>
      carrier(
        7,
        { effectiveUid: 0, realUid: 0, capEff: '000000000004001f', hostUserNamespace: true },
        { capBnd: '000000000004001f', devEntriesSeen: 3, ownRoot: undefined, mounts: goodPosture().mounts, ...posture },
      );
    const usk = (over: Partial<NonNullable<Observation['exec']['userSpaceKernel']>> = {}, exec: Partial<Observation['exec']> = {}): Observation =>
      fakeObservation(
        {
          hostProcesses: [],
          hostProcessCountMax: 5,
          userSpaceKernel: {
            kernel: 'gVisor (runsc)',
            tie: "this execution's nonce in host pid 9's memory at 7f00-7f10, mapped from /memfd:runsc-memory",
            addressSpaces: [carrier(9)],
            kernels: [carrier(8)],
            fileServers: [gofer()],
            ...over,
          },
          ...exec,
        },
        { finished: true },
      );

    it('hold where the address space, its kernel (and for files, its file server) show the posture', () => {
      const lax: ProbeContext = { ...ctx, policy: { ...CI_POLICY, posture: { ...CI_POLICY.posture!, namespaces: ['mnt', 'net', 'ipc', 'uts'] } } };
      for (const p of POSTURE_PROBES)
        expect(verdict(p, usk(), lax), p.id).toMatch(
          /^held: the box's program runs on a user-space kernel, gVisor \(runsc\) \(this execution's nonce in host pid 9's memory.*: the \d processes of it the host read/,
        );
      // The file server is named where it is not judged.
      expect(verdict(postureCapabilities, usk())).toMatch(
        /its file servers \(pid 7: uid 0, CapEff 000000000004001f\) open its files on the host and are judged by the files probes only/,
      );
      for (const p of [identityUid, identityCapabilities, identityNoNewPrivs])
        expect(verdict(p, usk()), p.id).toMatch(/^held: .*: the 2 address space\(s\) and kernel the host read: /);
    });

    it('cross on what the host reads of them: the host pid namespace, a kernel without seccomp, a writable host binary in the file server', () => {
      expect(verdict(postureNamespaces, usk())).toMatch(/^crossed: .*: address space \(pid 9\) shares the host's pid namespace; kernel \(pid 8\) shares/);
      const open = usk({ kernels: [carrier(8, { seccomp: 0, noNewPrivs: 0 })] });
      expect(verdict(postureSeccomp, open)).toMatch(/^crossed: .*: kernel \(pid 8\) runs without a seccomp filter/);
      expect(verdict(identityNoNewPrivs, open)).toMatch(/^crossed: .*: kernel \(pid 8\) can gain privileges/);
      const rootKernel = usk({
        kernels: [carrier(8, { effectiveUid: 0, realUid: 0, hostUserNamespace: true, capEff: '000001ffffffffff' }, { capBnd: '000001ffffffffff' })],
      });
      expect(verdict(identityUid, rootKernel)).toMatch(/^crossed: .*: kernel \(pid 8\) runs as root/);
      expect(verdict(postureCapabilities, rootKernel)).toMatch(/^crossed: .*CAP_SYS_ADMIN/);
      const bound = usk({
        fileServers: [
          gofer({ mounts: [...goodPosture().mounts, mount('/usr/sbin/docker-init', { fsType: 'ext4', device: '254:0', hostPath: '/usr/bin/tini-static' })] }),
        ],
      });
      expect(verdict(postureMounts, bound)).toMatch(/^crossed: .*its file servers: pid 7\): file server \(pid 7\) writable host \/usr\/bin\/tini-static/);
      // The kernel's own empty root hides no device node; a host disk bound into the file server's view is found.
      const disk = usk({ fileServers: [gofer({ devNodes: [{ path: '/dev/vda', device: '254:0', hostBlockDevice: true, usable: true }] })] });
      expect(verdict(postureDevices, disk)).toMatch(/^crossed: .*host block device node \/dev\/vda/);
      // A root of its own that the host could not walk whole, or with a device node in it, proves nothing.
      for (const ownRoot of [undefined, { entries: 256, blockNodes: 0, complete: false }, { entries: 3, blockNodes: 1, complete: true }]) {
        expect(verdict(postureDevices, usk({ kernels: [carrier(8, {}, { ownRoot })] }))).toMatch(
          /^inconclusive: .*kernel \(pid 8\): the host saw nothing in the box's \/dev/,
        );
      }
    });

    it('never hold on a kernel nobody read, without a file server for files, or beside a process of the program itself', () => {
      for (const p of POSTURE_PROBES) expect(verdict(p, usk({ kernels: [] })), p.id).toMatch(/^inconclusive: the backend named 5 host process/);
      expect(verdict(identityUid, usk({ kernels: [] }))).toMatch(/^inconclusive: the backend named 5 host process/);
      for (const p of [postureMounts, postureDevices])
        expect(verdict(p, usk({ fileServers: [] })), p.id).toMatch(/^inconclusive: .*no file server of that kernel/);
      // The payload's interpreter seen as a host process: the host sees the program itself, and that decides.
      const direct = identity({ pid: 50, effectiveUid: 0, realUid: 0 });
      attachPosture(direct, goodPosture({ pid: 50 }));
      expect(verdict(identityUid, usk({}, { hostProcesses: [direct] }))).toMatch(/^crossed: python3 \(pid 50\) runs as root/);
      // A copied observation lost the postures: nothing can be held.
      const copied = JSON.parse(JSON.stringify(usk().exec)) as Observation['exec'];
      for (const p of POSTURE_PROBES) expect(verdict(p, fakeObservation(copied, { finished: true })), p.id).toMatch(/^inconclusive: /);
      // Not run: the challenge was not answered.
      expect(verdict(postureSeccomp, { ...usk(), attempted: false })).toMatch(/^inconclusive: no answer to this execution's challenge/);
    });

    it("identity-setuid: judged on the address space that held the planted program's mark, and the kernel, read while it ran", () => {
      const tie =
        "this execution's program mark in host pid 12's memory at 7f20-7f30, mapped from /memfd:runsc-memory, and not its nonce (8192 bytes read, every present page)";
      const ran = { stdout: capture('binary mode 4755 owner 0\nsetuid binary exited 0\n') };
      expect(verdict(identitySetuid, usk({ marked: { tie, addressSpace: carrier(12), kernel: carrier(8) } }, ran))).toMatch(
        /^held: the box's program runs on a user-space kernel, gVisor \(runsc\) .*: the planted setuid-root binary ran \(this execution's program mark in host pid 12's memory.*\); while it ran: address space \(pid 12\) euid 65529, CapEff 0000000000240000, kernel \(pid 8\) euid 65529.*gave nothing on the host$/,
      );
      const rootSpace = usk(
        { marked: { tie, addressSpace: carrier(12, { effectiveUid: 0, realUid: 65529, hostUserNamespace: true }), kernel: carrier(8) } },
        ran,
      );
      expect(verdict(identitySetuid, rootSpace)).toMatch(/^crossed: .*its address space \(pid 12\) ran as root \(euid 0\) on the host$/);
      // No mark found, or the kernel not read with it: whether the planted binary ran is unknown.
      expect(verdict(identitySetuid, usk())).toMatch(/^inconclusive: the backend named 5 host process/);
      expect(verdict(identitySetuid, usk({ marked: { tie, addressSpace: carrier(12) } }, ran))).toMatch(/^inconclusive: /);
      expect(verdict(identitySetuid, usk({ kernels: [], marked: { tie, addressSpace: carrier(12), kernel: carrier(8) } }, ran))).toMatch(/^inconclusive: /);
      // A payload that could not run the binary (exit 3), or never said it ran to its end, holds nothing on a mark.
      const could = { stdout: capture('could not run the setuid binary: [Errno 13] Permission denied\n'), exitCode: 3 };
      for (const exec of [could, { ...ran, exitCode: 3 }, {}])
        expect(verdict(identitySetuid, usk({ marked: { tie, addressSpace: carrier(12), kernel: carrier(8) } }, exec))).toMatch(/^inconclusive: /);
      // The planted binary seen as a host process decides, mark or not.
      const planted = identity({ pid: 51, command: 'suid-sleep', effectiveUid: 0 });
      expect(verdict(identitySetuid, usk({ marked: { tie, addressSpace: carrier(12), kernel: carrier(8) } }, { hostProcesses: [planted] }))).toMatch(
        /^crossed: the planted setuid-root binary ran with euid 0/,
      );
    });
  });
});

describe('posture-mounts: host paths judged by where they are on the host, not by their name in the box', () => {
  const withMount = (m: MountEntry, id: ProcessIdentity = identity()) =>
    verdict(postureMounts, observed(goodPosture({ mounts: [...goodPosture().mounts, m] }), id));

  it('a host tree mounted at an innocent name, a writable system dir, a host socket, the decoys: crossed', () => {
    expect(withMount(mount('/usr/share/x', { fsType: 'ext4', device: '254:0', hostPath: '/', readOnly: true }))).toMatch(
      /^crossed: .*host path \/ at \/usr\/share\/x/,
    );
    expect(withMount(mount('/opt', { fsType: 'ext4', device: '254:0', hostPath: '/usr' }))).toMatch(/^crossed: .*writable host \/usr at \/opt/);
    expect(withMount(mount('/var/run/docker.sock', { fsType: 'tmpfs', device: '0:25', hostPath: '/run/docker.sock', hostSocket: true }))).toMatch(
      /^crossed: .*host Unix socket \/run\/docker\.sock/,
    );
    // Under the run's scratch directory, but the run's decoys: never allowed.
    expect(withMount(mount('/d', { fsType: 'ext4', device: '254:0', hostPath: `${ctx.decoyDir}/aws`, readOnly: true }))).toMatch(
      /^crossed: .*the run's host decoys/,
    );
    expect(withMount(mount('/s', { fsType: 'tmpfs', device: '0:25', hostPath: ctx.hostDecoys.socketPath, hostSocket: true }))).toMatch(
      /^crossed: .*the run's host decoys/,
    );
    // The run's whole scratch directory: the run's own files, but it holds the decoys.
    expect(withMount(mount('/scratch', { fsType: 'ext4', device: '254:0', hostPath: '/tmp/sandcheck-rposture1-ab', readOnly: true }))).toMatch(
      /^crossed: .*the run's host decoys through/,
    );
    expect(withMount(mount('/hostdev', { fsType: 'devtmpfs', device: '0:6', hostPath: '/dev' }))).toMatch(/^crossed: .*host path \/dev/);
    expect(withMount(mount('/x', { fsType: 'ext4', device: '254:0', hostPath: '(host filesystem 254:0):/home' }))).toMatch(/^crossed: .*a host filesystem/);
  });

  it("the runtime's own: read-only system software, the run's files, the image root, per-box files, default devices, the allowlist", () => {
    expect(withMount(mount('/usr', { fsType: 'ext4', device: '254:0', hostPath: '/usr', readOnly: true }))).toMatch(/^held: /);
    expect(withMount(mount('/tmp', { fsType: 'ext4', device: '7:1', hostPath: '/var/lib/sandcheck/bwrap/rposture1-e2/fs/tmp' }))).toMatch(/^held: /);
    expect(withMount(mount('/etc/hosts', { fsType: 'ext4', device: '254:0', hostPath: `/var/lib/docker/containers/${'a'.repeat(64)}/hosts` }))).toMatch(
      /^held: /,
    );
    expect(withMount(mount('/dev/shm', { device: '0:88', hostPath: `/var/lib/docker/containers/${'b'.repeat(64)}/mounts/shm` }))).toMatch(/^held: /);
    // The same name from any other directory is a host path.
    expect(withMount(mount('/etc/hosts', { fsType: 'ext4', device: '254:0', hostPath: '/etc/hosts' }))).toMatch(/^crossed: .*host path \/etc\/hosts/);
    expect(withMount(mount('/dev/null', { fsType: 'devtmpfs', device: '0:6', hostPath: '/dev/null' }))).toMatch(/^held: /);
    const data = mount('/data', { fsType: 'ext4', device: '254:0', hostPath: '/srv/datasets/x', readOnly: true });
    expect(withMount(data)).toMatch(/^crossed: .*host path \/srv\/datasets\/x/);
    const allowing: ProbeContext = { ...ctx, policy: { ...CI_POLICY, posture: { ...CI_POLICY.posture!, hostMounts: { allow: ['/srv/datasets'] } } } };
    expect(verdict(postureMounts, observed(goodPosture({ mounts: [...goodPosture().mounts, data] })), allowing)).toMatch(/^held: /);
    // The allowlist is by path prefix, not by string prefix.
    const near = mount('/d2', { fsType: 'ext4', device: '254:0', hostPath: '/srv/datasets-private' });
    expect(verdict(postureMounts, observed(goodPosture({ mounts: [...goodPosture().mounts, near] })), allowing)).toMatch(/^crossed: /);
  });

  it("kernel filesystems: writable /proc/sys, sysfs or cgroup cross for host root; the host's own /proc always", () => {
    const root = identity({ effectiveUid: 0, realUid: 0 });
    const noCover = goodPosture().mounts.filter((m) => m.mountPoint !== '/proc/sys');
    expect(verdict(postureMounts, observed(goodPosture({ mounts: noCover }), root))).toMatch(/^crossed: .*writable \/proc\/sys/);
    expect(verdict(postureMounts, observed(goodPosture({ mounts: noCover })))).toMatch(/^held: /);
    expect(withMount(mount('/sys', { fsType: 'sysfs', device: '0:51' }), root)).toMatch(/^crossed: .*writable sysfs at \/sys/);
    expect(withMount(mount('/sys/fs/cgroup/memory', { fsType: 'cgroup', device: '0:32' }), root)).toMatch(/^crossed: .*writable cgroup/);
    expect(withMount(mount('/proc', { fsType: 'proc', device: '0:21', hostPath: '/proc', readOnly: true }))).toMatch(/^crossed: .*the host's own \/proc/);
  });

  it('too many mounts to read, or none at all: inconclusive', () => {
    expect(verdict(postureMounts, observed(goodPosture({ mountsTruncated: true })))).toMatch(/^inconclusive: python3 \(pid 42\): more mounts/);
    expect(verdict(postureMounts, observed(goodPosture({ mounts: [] })))).toMatch(/^inconclusive: python3 \(pid 42\): the host read no mounts/);
  });
});

describe('posture-devices', () => {
  const disk = { path: '/dev/sda', device: '8:0', hostBlockDevice: true, usable: true };

  it('a host disk node with block devices allowed crosses; a refusing device cgroup holds; no cgroup to read is inconclusive', () => {
    expect(verdict(postureDevices, observed(goodPosture({ devNodes: [disk], deviceCgroup: { path: '/', rules: ['a *:* rwm'] } })))).toMatch(
      /^crossed: .*\/dev\/sda/,
    );
    expect(verdict(postureDevices, observed(goodPosture({ devNodes: [disk] })))).toMatch(/^held: /);
    const { deviceCgroup: _, ...noCgroup } = goodPosture({ devNodes: [disk] });
    expect(verdict(postureDevices, observed(noCgroup))).toMatch(/^inconclusive: /);
  });

  it('CAP_MKNOD over the host counts as a way to a disk; a node on a nodev mount does not', () => {
    const allAllowed = { path: '/', rules: ['a *:* rwm'] };
    expect(verdict(postureDevices, observed(goodPosture({ capBnd: '0000000008000000', deviceCgroup: allAllowed })))).toMatch(/^crossed: .*CAP_MKNOD/);
    expect(verdict(postureDevices, observed(goodPosture({ devNodes: [{ ...disk, usable: false }], deviceCgroup: allAllowed })))).toMatch(/^held: /);
  });

  it('a box that hides its /dev from the host is inconclusive, not held', () => {
    expect(verdict(postureDevices, observed(goodPosture({ devEntriesSeen: 0, deviceCgroup: { path: '/', rules: ['a *:* rwm'] } })))).toMatch(
      /^inconclusive: python3 \(pid 42\): the host saw nothing/,
    );
  });
});

describe("kernel-identity: a separate kernel is never taken from the box's word", () => {
  const HOST_BOOT = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
  const strict: ProbeContext = { ...ctx, policy: { ...CI_POLICY, name: 'strict', isolation: { separateKernel: true } } };
  const fakeReport = 'SANDCHECK-REPORT {"bootId": "11111111-2222-3333-4444-555555555555", "uname": ["Linux", "vm", "5.10.0-firecracker"]}\n';
  const kernelObs = (exec: Parameters<typeof fakeObservation>[0], rest: Partial<Observation> = {}) =>
    fakeObservation({ wallMs: 3200, stdout: capture(fakeReport), ...exec }, { finished: true, survivorSeenAlive: false, ...rest });
  const judge = (o: Observation, c: ProbeContext = strict) => {
    const j = judgeKernelIdentity(o, c, HOST_BOOT);
    return `${j.verdict}: ${j.reason}`;
  };

  it('a box on the host kernel printing a fake boot id and uname: crossed by the host process scan or the sampled interpreter', () => {
    expect(judge(kernelObs({ hostProcessCountMax: 1 }, { survivorSeenAlive: true }))).toMatch(/^crossed: .*process scan saw the payload's marked child/);
    expect(judge(kernelObs({ hostProcesses: [identity()], hostProcessCountMax: 1 }))).toMatch(/^crossed: .*interpreter ran as host pid 42/);
  });

  it("the host's boot id in the box's output is a shared kernel, in any case and without dashes", () => {
    expect(judge(kernelObs({ stdout: capture(`boot ${HOST_BOOT.toUpperCase()}\n`) }))).toMatch(/^crossed: .*boot id/);
    expect(judge(kernelObs({ stderr: capture(HOST_BOOT.replaceAll('-', '')) }))).toMatch(/^crossed: .*boot id/);
  });

  it('a fake boot id with no host processes named (a hidden box) is inconclusive, never held', () => {
    expect(judge(kernelObs({}))).toMatch(/^inconclusive: .*named no live host process/);
    expect(judge(kernelObs({ hostProcessCountMax: 3 }, { finished: false }))).toMatch(/^inconclusive: the payload started but did not finish/);
    expect(judge(kernelObs({ hostProcessCountMax: 3 }, { attempted: false }))).toMatch(/^inconclusive: /);
  });

  const space = (pid: number): ProcessIdentity => identity({ pid, command: 'exe' });
  const userSpaceKernel = {
    kernel: 'gVisor (runsc)',
    tie: "this execution's nonce in host pid 9's memory",
    addressSpaces: [space(9)],
    kernels: [space(8)],
    fileServers: [],
    marked: { tie: "this execution's program mark in host pid 12's memory", addressSpace: space(12), kernel: space(8) },
  };

  it("held: the payload's and its marked child's address spaces found in one user-space kernel, the child never a host task", () => {
    expect(judge(kernelObs({ hostProcesses: [], hostProcessCountMax: 3, userSpaceKernel }))).toMatch(
      /^held: the box's program runs on a user-space kernel, gVisor \(runsc\): the payload's address space \(this execution's nonce in host pid 9's memory\) and its marked child's \(this execution's program mark in host pid 12's memory\) belong to its kernel \(pid 8\), and the host's process scan never saw that child/,
    );
  });

  it('what the host did not see is never a separate kernel: absence alone, no marked child, another kernel, or no scan is inconclusive', () => {
    // A harness in another pid namespace, or a box on another machine: the backend names processes, the scan sees nothing.
    expect(judge(kernelObs({ hostProcesses: [], hostProcessCountMax: 3 }))).toMatch(
      /^inconclusive: .*no user-space kernel's address space held this execution's nonce/,
    );
    expect(judge(kernelObs({ hostProcessCountMax: 3, userSpaceKernel: { ...userSpaceKernel, marked: undefined } }))).toMatch(
      /^inconclusive: .*its marked child's never was/,
    );
    expect(judge(kernelObs({ hostProcessCountMax: 3, userSpaceKernel: { ...userSpaceKernel, kernels: [space(7)] } }))).toMatch(
      /^inconclusive: .*without the kernel that ran it/,
    );
    expect(judge(kernelObs({ hostProcessCountMax: 3, userSpaceKernel }, { survivorSeenAlive: undefined }))).toMatch(
      /^inconclusive: .*process scan did not run/,
    );
    // The scan saw the child on the host: a shared kernel whatever the address spaces say.
    expect(judge(kernelObs({ hostProcessCountMax: 3, userSpaceKernel }, { survivorSeenAlive: true }))).toMatch(
      /^crossed: .*marked child \(sandcheck-survivor-sandcheck-mark-[0-9a-f]{32}\)/,
    );
  });

  it('not required (reference, ci): the fact is reported as not-applicable either way', () => {
    expect(judge(kernelObs({ hostProcessCountMax: 1 }, { survivorSeenAlive: true }), ctx)).toMatch(
      /^not-applicable: the box shares the host's kernel: .*does not require a separate kernel/,
    );
    expect(judge(kernelObs({ hostProcessCountMax: 3, userSpaceKernel }), ctx)).toMatch(/^not-applicable: the box's program runs on a user-space kernel/);
    expect(judge(kernelObs({ hostProcessCountMax: 3 }), ctx)).toMatch(/^not-applicable: could not tell which kernel/);
  });
});

describe('posture policy and host views', () => {
  it('reference and ci require the essay posture and report the kernel without requiring it', () => {
    const p: Policy = CI_POLICY;
    for (const item of ['posture.namespaces', 'posture.hostMounts', 'posture.seccomp', 'posture.capabilityBounding', 'posture.devices'] as const)
      expect(policyRequires(p, item), item).toBe(true);
    expect(policyRequires(p, 'isolation.separateKernel')).toBe(false);
    const { posture: _, isolation: __, ...bare } = p;
    for (const item of [
      'posture.namespaces',
      'posture.hostMounts',
      'posture.seccomp',
      'posture.capabilityBounding',
      'posture.devices',
      'isolation.separateKernel',
    ] as const)
      expect(policyRequires(bare, item), item).toBe(false);
    expect(policyRequires({ ...p, posture: { ...p.posture!, hostMounts: 'any', seccomp: 'any' } }, 'posture.hostMounts')).toBe(false);
  });

  it('parses mountinfo (escaped paths, ro and nodev) and resolves a box mount to its host path', () => {
    const host = parseMountinfo('27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n42 27 254:0 /run/netns /run/netns rw - ext4 /dev/vda rw\n');
    const box = parseMountinfo('100 99 254:0 /home/a\\040b /data ro,nodev,relatime - ext4 /dev/vda rw\n101 99 0:77 / /tmp rw - tmpfs tmpfs rw\n');
    expect(box[0]).toMatchObject({ mountPoint: '/data', root: '/home/a b', readOnly: true, noDevices: true });
    expect(hostPathOf(box[0] as MountEntry, host)).toBe('/home/a b');
    expect(hostPathOf(box[1] as MountEntry, host)).toBeUndefined();
    expect(hostPathOf({ device: '254:0', root: '/run/netns/x' }, host)).toBe('/run/netns/x');
  });
});
