/**
 * The capability escapes' judges and host-side helpers, and the ways a broken or lying box could try to
 * earn a `held` from them: no ctypes, no /dev, EPERM printed without running, a probe bug (EBADF), a
 * decisive call that "worked" but found nothing, a box holding the capability per the host, a blind
 * witness. Each must come out inconclusive (or crossed), never held.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeMarkers, fakeProof, forgedMarkers, type FakeExecInput, type FakeScript } from '../../backends/fake/fake-backend.js';
import { CI_POLICY } from '../../model/policy.js';
import type { Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { makeCanaries } from '../../lab/canaries.js';
import type { ProcessIdentity } from '../../lab/host-process.js';
import type { Packet } from '../../lab/netns/packet.js';
import type { WitnessHealth } from '../../lab/witness-health.js';
import { STEP_MARKER, escapeSteps } from '../../probes/_shared/escapes.js';
import { devMajor, devMinor, locateInMountinfo } from '../../probes/_shared/escapes-host.js';
import { escapeFileHandle } from '../../probes/escape-file-handle/probe.js';
import { escapeKernelModule } from '../../probes/escape-kernel-module/probe.js';
import { escapeMknodDisk } from '../../probes/escape-mknod-disk/probe.js';
import { escapeMountHost } from '../../probes/escape-mount-host/probe.js';
import { escapeProcRoot } from '../../probes/escape-proc-root/probe.js';
import { escapeRawSocket, forgedSources } from '../../probes/escape-raw-socket/probe.js';
import { escapeProbes } from '../../suites/escapes.js';
import { capture, fakeObservation } from '../helpers/observation.js';
import { attachPosture } from '../../lab/host-process.js';
import { boundSocketPaths, hostChanges, type HostSnapshot } from '../helpers/host-snapshot.js';
import { FAST_POLICY, runFake } from '../helpers/fake-run.js';

const ctx: ProbeContext = {
  policy: CI_POLICY,
  runId: 'rescj',
  nonce: 'feedbeef01234567',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
};

const step = (s: string, outcome: string, target?: string, token = 'token-escape'): string =>
  `${STEP_MARKER} ${token} ${JSON.stringify({ step: s, outcome, ...(target ? { target } : {}) })}\n`;

/** A payload that ran to its end (challenge answered twice, positive control seen) and printed these lines. */
const ran = (lines: string, rest: Partial<Observation> = {}): Observation =>
  fakeObservation(
    { stdout: capture(`SANDCHECK-ATTEMPT x\n${lines}SANDCHECK-DONE x\n`) },
    { finished: true, positiveControl: { where: 'file', seen: true }, ...rest },
  );

const root: ProcessIdentity = {
  pid: 42,
  command: 'python3',
  realUid: 0,
  effectiveUid: 0,
  capEff: '000001ffffffffff',
  noNewPrivs: 0,
  seccomp: 0,
  peakRssBytes: null,
  hostUserNamespace: true,
};
const noCaps: ProcessIdentity = { ...root, realUid: 65529, effectiveUid: 65529, capEff: '0000000000000000', noNewPrivs: 1, seccomp: 2 };
/** The sample as the host read it with its posture: `cmdline` ties it to an execution (the payload's argv carries the nonce). */
const withCmdline = (id: ProcessIdentity, cmdline = `python3 payload.py ${ctx.nonce}`, deviceCgroup?: { path: string; rules: string[] }): ProcessIdentity => {
  const copy = { ...id };
  attachPosture(copy, {
    pid: copy.pid,
    cmdline,
    sharedNamespaces: {},
    capBnd: '0',
    capAmb: '0',
    mounts: [],
    mountsTruncated: false,
    devNodes: [],
    devEntriesSeen: 0,
    ...(deviceCgroup ? { deviceCgroup } : {}),
  });
  return copy;
};

const FILE_PROBES: [SecurityProbe, string][] = [
  [escapeMountHost, step('mount-host-fs', 'EPERM', 'unshare')],
  [escapeFileHandle, step('open_by_handle_at', 'EPERM', '/usr')],
  [escapeProcRoot, step('proc-root', 'ENOENT', 'decoy process') + step('proc-root', 'ENOENT', 'pid 1')],
  [escapeMknodDisk, step('mknod-read', 'EPERM', 'mknod in /work')],
];

describe('escape judges: held only when the payload reached the decisive call and the control explains the refusal', () => {
  for (const [probe, refused] of FILE_PROBES) {
    it(`${probe.id}: refused by its control → held; the same lines under a wrong token, a probe bug, or a silent success → not held`, () => {
      expect(probe.judge(ran(refused), ctx).verdict).toBe('held');
      // Lines a box printed without this execution's token decide nothing.
      expect(probe.judge(ran(refused.replaceAll('token-escape', 'forged-token')), ctx).verdict).toBe('inconclusive');
      // Python without ctypes, or a box with nothing to try: the decisive step never ran.
      expect(probe.judge(ran(step('setup', 'no-ctypes', 'ImportError')), ctx).verdict).toBe('inconclusive');
      expect(probe.judge(ran(''), ctx).verdict).toBe('inconclusive');
      // A probe bug is no control.
      const bug = refused.replace(/"outcome":"[A-Z]+"/g, '"outcome":"EBADF"');
      expect(probe.judge(ran(bug), ctx).reason).toMatch(/does not explain/);
      // The call worked and still nothing came out: the probe missed its target.
      const worked = probe.judge(ran(refused.replace(/"outcome":"[A-Z]+"/, '"outcome":"ok"')), ctx);
      expect(worked.verdict).toBe('inconclusive');
      // Not finished, or the in-box positive control missing: never held.
      expect(probe.judge({ ...ran(refused), finished: false }, ctx).verdict).toBe('inconclusive');
      expect(probe.judge({ ...ran(refused), positiveControl: { where: 'file', seen: false } }, ctx).verdict).toBe('inconclusive');
    });

    it(`${probe.id}: a decoy value outside is crossed whatever the payload printed`, () => {
      const j = probe.judge(ran(refused, { canaryHits: [{ label: 'file:control-plane/token', where: 'stdout' }] }), ctx);
      expect(j.verdict).toBe('crossed');
      expect(j.evidence.some((e) => e.source === 'outside' && e.witness === 'canary-scan')).toBe(true);
    });
  }

  it('mixed descriptors: EPERM on one, ESTALE on the others is held; a foreign errno among them is not', () => {
    const lines = step('open_by_handle_at', 'ESTALE', '/') + step('open_by_handle_at', 'EPERM', '/etc/hosts');
    expect(escapeFileHandle.judge(ran(lines), ctx).verdict).toBe('held');
    expect(escapeFileHandle.judge(ran(lines + step('open_by_handle_at', 'EINVAL', '.')), ctx).verdict).toBe('inconclusive');
  });

  it("escapeSteps reads only lines with this execution's token, from the head and the tail", () => {
    const obs = fakeObservation({
      stdout: { ...capture(step('a', 'ok')), tailBase64: Buffer.from(step('b', 'EPERM') + step('c', 'EPERM', undefined, 'other')).toString('base64') },
    });
    expect(escapeSteps(obs).map((s) => s.step)).toEqual(['a', 'b']);
  });
});

describe('escape-kernel-module: inside evidence may cross, never hold', () => {
  const refused = step('init_module', 'EPERM');
  it('EPERM is held only with the host seeing the program without CAP_SYS_MODULE', () => {
    expect(escapeKernelModule.judge(ran(refused, { exec: { ...ran(refused).exec, hostProcesses: [withCmdline(noCaps)] } }), ctx).verdict).toBe('held');
    // A capability-free python3 the backend named that is not this execution's payload: not shown to be the box's.
    expect(
      escapeKernelModule.judge(ran(refused, { exec: { ...ran(refused).exec, hostProcesses: [withCmdline(noCaps, 'python3 /opt/agent.py')] } }), ctx).reason,
    ).toMatch(/carries this execution's nonce/);
    // The host saw nothing (a user-space kernel such as gVisor): inconclusive.
    expect(escapeKernelModule.judge(ran(refused), ctx).verdict).toBe('inconclusive');
    // The host saw the capability: something else refused it.
    expect(escapeKernelModule.judge(ran(refused, { exec: { ...ran(refused).exec, hostProcesses: [root] } }), ctx).verdict).toBe('inconclusive');
    // CAP_SYS_MODULE inside a user namespace of the box's own is no host capability.
    expect(
      escapeKernelModule.judge(ran(refused, { exec: { ...ran(refused).exec, hostProcesses: [withCmdline({ ...root, hostUserNamespace: false })] } }), ctx)
        .verdict,
    ).toBe('held');
  });

  it('an error from past the permission check is crossed on the challenge-bound word alone; unsigned lines decide nothing', () => {
    const j = escapeKernelModule.judge(ran(step('init_module', 'ENOEXEC')), ctx);
    expect(j.verdict).toBe('crossed');
    expect(j.reason).toMatch(/inside evidence only/);
    expect(escapeKernelModule.judge(ran(step('init_module', 'ENOEXEC', undefined, 'forged')), ctx).verdict).toBe('inconclusive');
    expect(escapeKernelModule.judge({ ...ran(step('init_module', 'ENOEXEC')), attempted: false }, ctx).verdict).toBe('inconclusive');
  });
});

describe('escape-file-handle and escape-mknod-disk: a refusal while the host saw the power is no held', () => {
  /** The refusal as printed, with the host's samples of the program. */
  const seenWith = (lines: string, ...procs: ProcessIdentity[]): Observation => ran(lines, { exec: { ...ran(lines).exec, hostProcesses: procs } });

  it('file-handle: EPERM while the host saw CAP_DAC_READ_SEARCH over the host and no seccomp filter is inconclusive', () => {
    const eperm = step('open_by_handle_at', 'EPERM', '/usr');
    const j = escapeFileHandle.judge(seenWith(eperm, withCmdline(root)), ctx);
    expect(j.verdict).toBe('inconclusive');
    expect(j.reason).toMatch(
      /holding CAP_DAC_READ_SEARCH over the host \(CapEff 000001ffffffffff\) with no seccomp filter, yet the payload reported open_by_handle_at \/usr: EPERM/,
    );
    expect(j.evidence.some((e) => e.source === 'outside' && e.witness === 'host-proc-status')).toBe(true);
    // A filter explains EPERM; so do a user namespace of the box's own and a program without the capability.
    expect(escapeFileHandle.judge(seenWith(eperm, withCmdline({ ...root, seccomp: 2 })), ctx).verdict).toBe('held');
    expect(escapeFileHandle.judge(seenWith(eperm, withCmdline({ ...root, hostUserNamespace: false })), ctx).verdict).toBe('held');
    expect(escapeFileHandle.judge(seenWith(eperm, withCmdline(noCaps)), ctx).verdict).toBe('held');
    // ESTALE (no descriptor on the host filesystem) does not depend on the capability.
    expect(escapeFileHandle.judge(seenWith(step('open_by_handle_at', 'ESTALE', '/'), withCmdline(root)), ctx).verdict).toBe('held');
    // A sample that is not this execution's payload decides nothing; a program the host cannot see withholds nothing.
    expect(escapeFileHandle.judge(seenWith(eperm, withCmdline(root, 'python3 /opt/agent.py')), ctx).verdict).toBe('held');
    expect(escapeFileHandle.judge(seenWith(eperm), ctx).verdict).toBe('held');
  });

  it('mknod: EPERM while the host saw CAP_MKNOD, no filter and a device cgroup allowing the disk is inconclusive', async () => {
    const { mkdtemp, mkdir, writeFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { dirname, join } = await import('node:path');
    const { decoyTarget, fsLocation } = await import('../../probes/_shared/escapes-host.js');
    const decoyDir = await mkdtemp(join(tmpdir(), 'sandcheck-mknod-judge-'));
    try {
      const here = { ...ctx, decoyDir };
      const target = decoyTarget(here).path;
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, 'x');
      const loc = fsLocation(target);
      expect(loc).toBeDefined();
      const eperm = step('mknod-read', 'EPERM', 'mknod in /work');
      const cg = (rules: string[]) => ({ path: '/sandcheck-test', rules });
      for (const rules of [
        ['a *:* rwm'],
        [`b ${loc?.major}:* mr`],
        ['c 1:3 rwm', `b ${loc?.major}:${loc?.minor} rm`],
        [`b ${loc?.major}:* m`, `b ${loc?.major}:${loc?.minor} r`],
      ]) {
        const j = escapeMknodDisk.judge(seenWith(eperm, withCmdline(root, undefined, cg(rules))), here);
        expect(j.verdict, rules.join(' | ')).toBe('inconclusive');
        expect(j.reason).toMatch(/holding CAP_MKNOD over the host .* its device cgroup \/sandcheck-test allowing the disk/);
      }
      // The device cgroup refusing the disk, or only one of making and reading it (Docker's default `b *:* m`: the
      // node is made, its open refused), a filter, no capability, an unreadable cgroup: held.
      for (const rules of [['c 1:3 rwm'], [`b ${loc?.major}:${loc?.minor} rw`], [`b ${(loc?.major ?? 0) + 1}:* mr`], ['b *:* m', 'c *:* m']]) {
        expect(escapeMknodDisk.judge(seenWith(eperm, withCmdline(root, undefined, cg(rules))), here).verdict, rules.join(' | ')).toBe('held');
      }
      expect(escapeMknodDisk.judge(seenWith(eperm, withCmdline({ ...root, seccomp: 2 }, undefined, cg(['a *:* rwm']))), here).verdict).toBe('held');
      expect(escapeMknodDisk.judge(seenWith(eperm, withCmdline(noCaps, undefined, cg(['a *:* rwm']))), here).verdict).toBe('held');
      expect(escapeMknodDisk.judge(seenWith(eperm, withCmdline(root)), here).verdict).toBe('held');
      // EROFS (nowhere writable) does not depend on the capability.
      expect(
        escapeMknodDisk.judge(seenWith(step('mknod-read', 'EROFS', 'mknod in /work'), withCmdline(root, undefined, cg(['a *:* rwm']))), here).verdict,
      ).toBe('held');
    } finally {
      await rm(decoyDir, { recursive: true, force: true });
    }
  });
});

describe('escape-raw-socket: the packet witness decides', () => {
  const seeing: WitnessHealth = { saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] };
  const f = forgedSources(ctx.nonce);
  const packet = (src: string, srcPort: number): Packet => ({
    time: 1,
    proto: 'udp',
    family: 4,
    src,
    srcPort,
    dst: '203.0.113.10',
    dstPort: 9,
    raw: `IP ${src}.${srcPort} > 203.0.113.10.9: UDP, length 33`,
  });
  const sent = step('raw-ip', 'ok', 'sent') + step('packet', 'ok', 'sent on lo');

  it('a forged source seen in the lab is crossed, even when the payload claims EPERM', () => {
    const j = escapeRawSocket.judge(ran(step('raw-ip', 'EPERM'), { network: { events: [], packets: [packet(f.raw.src, f.raw.port)], witness: seeing } }), ctx);
    expect(j.verdict).toBe('crossed');
    expect(j.evidence.some((e) => e.source === 'outside' && e.witness === 'packet-witness')).toBe(true);
  });

  it('sent but never seen is held only when the unforged control datagram reached the witness; a blind witness or no lab is inconclusive', () => {
    const control = packet('10.0.0.2', f.controlPort);
    const held = escapeRawSocket.judge(ran(sent, { network: { events: [], packets: [control], witness: seeing } }), ctx);
    expect(`${held.verdict}: ${held.reason}`).toMatch(
      /^held: .*none reached the lab: the unforged control datagram \(from 10\.0\.0\.2\) reached the lab, so the path dropped forged sources/,
    );
    // The lie: a box whose packets go somewhere the lab never sees. Sent, unseen, and no control seen either.
    const unseen = escapeRawSocket.judge(ran(sent, { network: { events: [], packets: [packet('198.51.100.7', 1)], witness: seeing } }), ctx);
    expect(`${unseen.verdict}: ${unseen.reason}`).toMatch(/^inconclusive: .*the lab saw no unforged control datagram from this execution/);
    // The control from another port (not this execution's) does not count.
    expect(escapeRawSocket.judge(ran(sent, { network: { events: [], packets: [packet('10.0.0.2', f.controlPort + 1)], witness: seeing } }), ctx).verdict).toBe(
      'inconclusive',
    );
    // A packet on the box's own loopback, where the box has no route out (its control refused for it): held.
    const noRoute = escapeRawSocket.judge(
      ran(step('raw-ip', 'ENETUNREACH') + step('packet', 'ok', 'sent on lo') + step('control', 'ENETUNREACH'), {
        network: { events: [], packets: [], witness: seeing },
      }),
      ctx,
    );
    expect(`${noRoute.verdict}: ${noRoute.reason}`).toMatch(/^held: .*the box has no route to the lab \(its unforged control datagram: ENETUNREACH\)/);
    // A control that was sent (ok) but never seen explains nothing.
    expect(escapeRawSocket.judge(ran(sent + step('control', 'ok', 'sent'), { network: { events: [], packets: [], witness: seeing } }), ctx).verdict).toBe(
      'inconclusive',
    );
    // Refused raw sockets need no control: the box's control stopped the attack itself.
    expect(
      escapeRawSocket.judge(ran(step('raw-ip', 'EPERM') + step('packet', 'EPERM'), { network: { events: [], packets: [], witness: seeing } }), ctx).verdict,
    ).toBe('held');
    expect(escapeRawSocket.judge(ran(sent, { network: { events: [], packets: [], witness: { ...seeing, proofOfLife: false } } }), ctx).verdict).toBe(
      'inconclusive',
    );
    expect(escapeRawSocket.judge(ran(sent), ctx).verdict).toBe('inconclusive');
    expect(escapeRawSocket.judge(ran(step('raw-ip', 'EINVAL'), { network: { events: [], packets: [], witness: seeing } }), ctx).verdict).toBe('inconclusive');
  });
});

describe('host-side helpers', () => {
  it('locates a path in mountinfo: the longest mount point on the device, through a bind root', () => {
    const info = [
      '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
      '30 22 254:0 /var/tmp /scratch rw,relatime shared:1 - ext4 /dev/vda rw',
      '31 22 0:40 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw',
      '32 22 7:3 / /mnt/with\\040space rw - ext4 /dev/loop3 rw',
    ].join('\n');
    expect(locateInMountinfo(info, '/scratch/run/decoy/token', 254, 0)).toEqual({
      major: 254,
      minor: 0,
      fstype: 'ext4',
      source: '/dev/vda',
      pathInFs: '/var/tmp/run/decoy/token',
    });
    expect(locateInMountinfo(info, '/home/x', 254, 0)?.pathInFs).toBe('/home/x');
    expect(locateInMountinfo(info, '/mnt/with space/d/t', 7, 3)?.pathInFs).toBe('/d/t');
    expect(locateInMountinfo(info, '/tmp/x', 254, 0)?.pathInFs).toBe('/tmp/x');
    expect(locateInMountinfo(info, '/tmp/x', 0, 41)).toBeUndefined();
  });

  it('splits dev_t as glibc does', () => {
    expect([devMajor(254 * 256), devMinor(254 * 256)]).toEqual([254, 0]);
    expect([devMajor(0x100703), devMinor(0x100703)]).toEqual([7, 259]); // os.makedev(7, 259)
    expect([devMajor(0x10303), devMinor(0x10303)]).toEqual([259, 3]);
  });

  it('every escape probe carries ATT&CK and CWE ids', () => {
    for (const p of escapeProbes) {
      expect(p.attack.length, p.id).toBeGreaterThan(0);
      expect(p.cwe.length, p.id).toBeGreaterThan(0);
    }
  });
});

/** What the payloads print on a hardened box, as a box that runs nothing would imitate it. */
function imitation({ args }: FakeExecInput, markers: { start: string; done: string } | undefined): string {
  const lines =
    step('mount-host-fs', 'EPERM', 'unshare', args.nonce) +
    step('open_by_handle_at', 'EPERM', '/', args.nonce) +
    step('init_module', 'EPERM', undefined, args.nonce);
  return `${markers?.start ?? ''}found via (in-box positive control): SCNRYPOSCTL0000\n${lines}${markers?.done ?? ''}`;
}

const liars: Record<string, FakeScript> = {
  'prints EPERM step lines without running (old markers, the nonce as token)': (input) => ({
    stdout: imitation(input, forgedMarkers(input.args.nonce)),
    exitCode: 0,
  }),
  'answers the challenge but its Python has no ctypes': (input) => {
    const m = fakeMarkers(input);
    const control = Buffer.from(input.files.get('sandcheck-control') ?? '').toString();
    return { stdout: `${m.start}${control}\n${m.done}`, exitCode: 0 };
  },
  'kills every payload at once': () => ({ exitCode: null, signal: 'SIGKILL', oomKilled: true }),
  'has no python at all': () => ({ exitCode: 127, stderr: 'python3: not found' }),
};

describe('the host snapshot comparison can fail', () => {
  const base: HostSnapshot = {
    decoys: { 'control-plane/token': 'abc mode 100600 mtime 1' },
    decoyPlaces: { 'decoy-run/docker.sock': 'socket ino 7 mode 140666 mtime 1', 'decoy-tmp/ssh-x/agent.1': 'socket ino 8 mode 140600 mtime 1' },
    ownKeys: ['user sandcheck-decoy:r1:user'],
    mounts: ['22 / / 254:0 ext4 /dev/vda'],
    modules: ['loop'],
    nodes: [],
    keys: ['keyring _uid.0', 'user sandcheck-decoy:r1:user'],
    ipc: ['/dev/shm/other'],
    sockets: ['/run/other.sock'],
  };
  it("flags a changed decoy, a decoy socket replaced or gone, a decoy key gone, a mount left under the test's directories or named by a payload, a host mount gone, a module, a node, a key, an IPC object, a socket", () => {
    expect(hostChanges(base, base, ['/scratch'])).toEqual([]);
    const changed: HostSnapshot = {
      decoys: { 'control-plane/token': 'abd mode 100600 mtime 2' },
      // The daemon socket replaced by another (a new inode), the agent socket removed, a file dropped beside them.
      decoyPlaces: { 'decoy-run/docker.sock': 'socket ino 9 mode 140666 mtime 2', 'decoy-run/planted': 'abc mode 100644 mtime 2' },
      ownKeys: [],
      mounts: [
        '40 /scratch/env/work/sc-escape-mnt/fs / 254:0 ext4 /dev/sc-escape',
        '41 /elsewhere/x / 7:3 ext4 /dev/loop3',
        '42 /var/lib/sandcheck/lab-docker/rx/data / 254:0 ext4 /dev/vda',
      ],
      modules: ['loop', 'sandcheck'],
      nodes: ['/dev/sc-escape-disk-1'],
      // A key a box added to the host's user keyring; another run's decoy keyring and a container's session keyring are not the box's.
      keys: ['keyring _uid.0', 'user sc-planted', `keyring _ses.${'a'.repeat(64)}`, 'keyring sandcheck-decoy-r2'],
      ipc: ['/dev/shm/other', '/dev/shm/sandcheck-covert-1', 'sysv shm key 1234'],
      sockets: ['/run/other.sock', '/tmp/sc-left.sock', '/scratch/env/own.sock', '/run/docker/x.sock', '/tmp/tsx-0/28546.pipe', '/tmp/tsx-0/x.sock'],
    };
    const found = hostChanges(base, changed, ['/scratch']).join('\n');
    expect(found).toMatch(/decoy control-plane\/token/);
    expect(found).toMatch(/mount added: 40 \/scratch/);
    expect(found).not.toMatch(/41 \/elsewhere|lab-docker/); // other runs' mounts on a shared machine
    expect(found).toMatch(/mount removed: 22 \//);
    expect(found).toMatch(/kernel modules/);
    expect(found).toMatch(/device node left: \/dev\/sc-escape-disk-1/);
    expect(found).toMatch(/decoy place decoy-run\/docker.sock: socket ino 7 .* → socket ino 9/);
    expect(found).toMatch(/decoy place decoy-tmp\/ssh-x\/agent.1: .* → gone/);
    expect(found).toMatch(/decoy place decoy-run\/planted appeared/);
    expect(found).toMatch(/decoy key gone: user sandcheck-decoy:r1:user/);
    expect(found).toMatch(/key added: user sc-planted/);
    expect(found).not.toMatch(/key added: .*(sandcheck-decoy|_ses\.)/);
    expect(found).toMatch(/ipc object left: \/dev\/shm\/sandcheck-covert-1/);
    expect(found).toMatch(/ipc object left: sysv shm key 1234/);
    expect(found).toMatch(/socket left: \/tmp\/sc-left.sock/);
    expect(found).not.toMatch(/own.sock|docker\/x.sock/);
    // Another test file's tsx process meanwhile (its IPC pipe) is not a payload's; a socket of another name there is.
    expect(found).not.toMatch(/28546\.pipe/);
    expect(found).toMatch(/socket left: \/tmp\/tsx-0\/x.sock/);
  });

  it("a socket a live process serves is that program's, not a payload's; once nobody serves it, it counts", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sc-bound-'));
    const path = join(dir, 'live.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(path, r));
    try {
      expect((await boundSocketPaths()).has(path)).toBe(true);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
    // A program that bound a socket and exited: the file stays, nobody serves it.
    execFileSync('/usr/bin/python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', path]);
    try {
      expect(existsSync(path)).toBe(true);
      expect((await boundSocketPaths()).has(path)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('liar boxes earn no held from the escapes', () => {
  it("a box replaying a previous execution's output (challenge answers, control and step lines included) earns no held", async () => {
    const cache = new Map<string, string>();
    // First run: output as a payload that really ran and was refused would print it (valid step tokens).
    const first = await runFake(
      [...escapeProbes],
      (input) => {
        const m = fakeMarkers(input);
        const t = fakeProof(input).token('escape');
        const control = Buffer.from(input.files.get('sandcheck-control') ?? '').toString();
        const lines = [
          ['mount-host-fs', 'EPERM'],
          ['open_by_handle_at', 'EPERM'],
          ['proc-root', 'ENOENT'],
          ['mknod-read', 'EPERM'],
        ]
          .map(([a, b]) => step(a ?? '', b ?? '', undefined, t))
          .join('');
        const out = `${m.start}${control}\n${lines}${m.done}`;
        cache.set(input.args.probe, out);
        return { stdout: out, exitCode: 0 };
      },
      { policy: FAST_POLICY },
    );
    expect(first.security.filter((r) => r.verdict === 'held').length).toBeGreaterThan(0);
    const { security } = await runFake([...escapeProbes], ({ args }) => ({ stdout: cache.get(args.probe) ?? '', exitCode: 0 }), { policy: FAST_POLICY });
    expect(security.filter((r) => r.verdict === 'held').map((r) => r.id)).toEqual([]);
  }, 60_000);

  for (const [name, script] of Object.entries(liars)) {
    it(
      name,
      async () => {
        const { security } = await runFake([...escapeProbes], script, { policy: FAST_POLICY });
        const ran = security.filter((r) => r.verdict !== 'not-applicable');
        expect(security.filter((r) => r.verdict === 'held').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
        expect(
          ran.every((r) => r.verdict === 'inconclusive'),
          ran.map((r) => `${r.id}: ${r.verdict}`).join('; '),
        ).toBe(true);
      },
      60_000,
    );
  }
});
