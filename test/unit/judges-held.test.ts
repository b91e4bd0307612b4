import { describe, expect, it } from 'vitest';
import { survivorName } from '../../lab/kernel-carriers.js';
import { securitySuite } from '../../suites/security.js';
import { CI_POLICY } from '../../model/policy.js';
import type { Observation, ProbeContext } from '../../model/probe.js';
import { makeCanaries } from '../../lab/canaries.js';
import { diskFill } from '../../probes/disk-fill/probe.js';
import { downloadApiLinks } from '../../probes/download-api-links/probe.js';
import { forkBomb } from '../../probes/fork-bomb/probe.js';
import { hostileBytes } from '../../probes/hostile-bytes/probe.js';
import { identityUid } from '../../probes/identity-uid/probe.js';
import { identityCapabilities } from '../../probes/identity-capabilities/probe.js';
import { memoryBomb } from '../../probes/memory-bomb/probe.js';
import { residue } from '../../probes/residue/probe.js';
import { surviveTeardown } from '../../probes/survive-teardown/probe.js';
import { capture, fakeObservation } from '../helpers/observation.js';
import { attachPosture } from '../../lab/host-process.js';

const MiB = 2 ** 20;
const ctx: ProbeContext = {
  policy: CI_POLICY,
  runId: 'rjudge',
  nonce: 'abc123',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
};

const obs = fakeObservation;

const proc = (over: Partial<{ effectiveUid: number; capEff: string; peakRssBytes: number }>) => ({
  pid: 42,
  command: 'python3',
  realUid: 64000,
  effectiveUid: 64000,
  capEff: '0000000000000000',
  noNewPrivs: 1,
  seccomp: 0,
  peakRssBytes: 10 * MiB,
  hostUserNamespace: true,
  ...over,
});

describe('resource and identity judges from outside evidence', () => {
  it('memory-bomb: OOM kill at the limit is held; a peak past the limit is crossed; no measurement is inconclusive', () => {
    const oom = memoryBomb.judge(
      obs({
        exitCode: null,
        signal: 'SIGKILL',
        backendReport: { timedOut: false, oomKilled: true, outputTruncated: false },
        resources: { source: 'cgroup', memoryPeakBytes: 512 * MiB, oomKills: 1 },
      }),
      ctx,
    );
    expect(oom.verdict).toBe('held');
    expect(oom.reason).toContain('OOM killer');
    expect(memoryBomb.judge(obs({ hostProcesses: [proc({ peakRssBytes: 900 * MiB })] }), ctx).verdict).toBe('crossed');
    expect(memoryBomb.judge(obs({ exitCode: 1 }), ctx).verdict).toBe('inconclusive');
    // The payload's own claim of finishing can only make things worse, never better.
    expect(memoryBomb.judge(obs({ resources: { source: 'cgroup', memoryPeakBytes: 100 * MiB } }, { finished: true }), ctx).verdict).toBe('crossed');
  });

  it('memory-bomb: a stop by anything but the memory control near its limit is inconclusive', () => {
    const killed = { exitCode: null, signal: 'SIGKILL', backendReport: { timedOut: false, oomKilled: true, outputTruncated: true } } as const;
    // A crash at 6 MiB, with the backend claiming an OOM kill that no counter shows.
    const crash = memoryBomb.judge(
      obs({ ...killed, wallMs: 40, resources: { source: 'cgroup', memoryPeakBytes: 6 * MiB, oomKills: 0, memoryFailcnt: 0 } }),
      ctx,
    );
    expect(crash.verdict).toBe('inconclusive');
    expect(crash.reason).toMatch(/never shown to act/);
    // The memory cgroup acted, but far below the policy's limit: some other, smaller limit.
    expect(memoryBomb.judge(obs({ ...killed, resources: { source: 'cgroup', memoryPeakBytes: 64 * MiB, oomKills: 1 } }), ctx).reason).toMatch(/below 80%/);
    // Stopped by the wall clock at 541 MiB (under the crossing threshold), no OOM kill counted.
    const wall = memoryBomb.judge(
      obs({ ...killed, wallMs: 5100, resources: { source: 'cgroup', memoryPeakBytes: 541 * MiB, oomKills: 0, memoryFailcnt: 3 } }),
      ctx,
    );
    expect(wall.verdict).toBe('inconclusive');
    expect(wall.reason).toMatch(/wall clock, not the memory limit/);
  });

  it('fork-bomb: refused forks at the limit are held; more processes than the limit are crossed', () => {
    expect(forkBomb.judge(obs({ resources: { source: 'cgroup', pidsPeak: 64, pidsMaxEvents: 80, pidsLimit: 64 } }), ctx).verdict).toBe('held');
    expect(forkBomb.judge(obs({ hostProcessCountMax: 145 }), ctx).verdict).toBe('crossed');
    expect(forkBomb.judge(obs({ hostProcessCountMax: 3 }), ctx).verdict).toBe('inconclusive');
    // One counted refusal at a peak of 2 is not the policy's limit acting.
    expect(forkBomb.judge(obs({ resources: { source: 'cgroup', pidsPeak: 2, pidsMaxEvents: 1, pidsLimit: 64 } }), ctx).verdict).toBe('inconclusive');
    // A peak near the limit without any counted refusal proves nothing about the limit.
    expect(forkBomb.judge(obs({ resources: { source: 'cgroup', pidsPeak: 60, pidsMaxEvents: 0, pidsLimit: 64 } }), ctx).verdict).toBe('inconclusive');
  });

  it("disk-fill: a disk-full exit code is the payload's word, not the disk limit acting (held cases: cause-judges.test.ts)", () => {
    const health = (drop: number) => ({
      before: { memAvailableBytes: 20e9, diskFreeBytes: 50e9, processCount: 100 },
      worst: { memAvailableBytes: 20e9, diskFreeBytes: 50e9 - drop, processCount: 100 },
      after: { memAvailableBytes: 20e9, diskFreeBytes: 50e9, processCount: 100 },
      maxEventLoopDelayMs: 5,
      memTotalBytes: 24e9,
    });
    expect(diskFill.judge(obs({ exitCode: 28, hostHealth: health(0) }), ctx).verdict).toBe('inconclusive');
    expect(diskFill.judge(obs({ exitCode: 0, hostHealth: health(1300 * MiB) }), ctx).verdict).toBe('crossed');
    expect(diskFill.judge(obs({ exitCode: 1, hostHealth: health(0) }), ctx).verdict).toBe('inconclusive');
  });

  it('identity: a non-root, capability-free process seen from the host is held; no host pids is inconclusive', () => {
    // Held only on a sample that is this execution's payload: the host read its command line with the nonce in it.
    const tied = proc({});
    attachPosture(tied, {
      pid: 42,
      cmdline: `python3 payload.py {"nonce": "${ctx.nonce}"}`,
      sharedNamespaces: {},
      capBnd: '0',
      capAmb: '0',
      mounts: [],
      mountsTruncated: false,
      devNodes: [],
      devEntriesSeen: 0,
    });
    expect(identityUid.judge(obs({ hostProcesses: [tied] }), ctx).verdict).toBe('held');
    // A clean python3 the backend named, with no tie to this execution (another box's, a launcher's): not the payload.
    expect(identityUid.judge(obs({ hostProcesses: [proc({})] }), ctx).reason).toMatch(
      /^no process of the box's program whose command line the host read carries this execution's nonce/,
    );
    expect(identityUid.judge(obs({ hostProcesses: [proc({ effectiveUid: 0 })] }), ctx).verdict).toBe('crossed');
    expect(identityCapabilities.judge(obs({ hostProcesses: [proc({ capEff: '00000000a80425fb' })] }), ctx).verdict).toBe('crossed');
    // Capabilities held only inside the box's own user namespace are not host capabilities.
    const inOwnUserns = { ...proc({ capEff: '00000000a80425fb' }), hostUserNamespace: false };
    attachPosture(inOwnUserns, {
      pid: 42,
      cmdline: `python3 payload.py ${ctx.nonce}`,
      sharedNamespaces: {},
      capBnd: '0',
      capAmb: '0',
      mounts: [],
      mountsTruncated: false,
      devNodes: [],
      devEntriesSeen: 0,
    });
    expect(identityCapabilities.judge(obs({ hostProcesses: [inOwnUserns] }), ctx).verdict).toBe('held');
    expect(identityUid.judge(obs({}), ctx).verdict).toBe('inconclusive');
  });

  it("download-api-links: held only for the payload's own symlink handed back unfollowed", () => {
    const ran = { attempted: true, finished: true };
    const base = obs({}, ran);
    const hop = `sc-link-${base.token('link')}`;
    const judged = (artifact: Record<string, unknown>) =>
      downloadApiLinks.judge({ ...base, artifacts: [{ path: 'result.txt', size: 0, ...artifact } as Observation['artifacts'][number]] }, ctx);
    expect(judged({ kind: 'symlink', linkTarget: hop }).verdict).toBe('held');
    // An API that never looked: a symlink without a target, or with the decoy's path (known from the payload's argv).
    expect(judged({ kind: 'symlink' }).reason).toMatch(/reported a symlink without its target/);
    expect(judged({ kind: 'symlink', linkTarget: `${ctx.decoyDir}/.aws/credentials` }).verdict).toBe('inconclusive');
    expect(judged({ kind: 'symlink', linkTarget: `sc-link-${'0'.repeat(32)}` }).verdict).toBe('inconclusive');
    // An API that followed the link to something without a decoy value, or calls the link a file: not shown to refuse links.
    expect(judged({ kind: 'file', content: new Uint8Array([120]) }).reason).toMatch(/reported a file where the payload made a symlink/);
    expect(judged({ kind: 'directory' }).verdict).toBe('inconclusive');
    // A link, but not the payload's.
    expect(judged({ kind: 'symlink', linkTarget: '/etc/hostname' }).verdict).toBe('inconclusive');
    expect(judged({ kind: 'symlink', linkTarget: hop, content: new Uint8Array([1]) }).verdict).toBe('crossed');
  });

  it('hostile-bytes: escaped control bytes are held, raw ones crossed', () => {
    const lines = (s: string, marker = 'hostile-token-hostile') => `${s} ${marker}\n`.repeat(3);
    expect(hostileBytes.judge(obs({ stdout: capture(lines('NUL[\\x00] ESC[\\x1b]')) }, { finished: true }), ctx).verdict).toBe('held');
    expect(hostileBytes.judge(obs({ stdout: capture(lines('NUL[\u0000]')) }, { finished: true }), ctx).verdict).toBe('crossed');
    // Lines marked with the nonce (in the payload's argv), not this execution's challenge answer: not the payload's.
    expect(hostileBytes.judge(obs({ stdout: capture(lines('NUL[\\x00]', `hostile-${ctx.nonce}`)) }, { finished: true }), ctx).verdict).toBe('inconclusive');
  });

  it('survive-teardown and residue: judged from the host scan, heartbeat and a fresh environment', () => {
    expect(surviveTeardown.judge(obs({}, { finished: true, survivorSeenAlive: true }), ctx).verdict).toBe('held');
    // A host scan that never saw the daemon alive cannot tell that it did not survive.
    expect(surviveTeardown.judge(obs({}, { finished: true }), ctx).verdict).toBe('inconclusive');
    expect(surviveTeardown.judge(obs({}, { finished: true, survivors: ['process 9 still ran'] }), ctx).verdict).toBe('crossed');
    expect(surviveTeardown.judge(obs({}, { finished: true, heartbeat: { afterDestroyBytes: 10, laterBytes: 40 } }), ctx).verdict).toBe('crossed');
    const second = (text: string) => obs({ stdout: capture(text) }, { finished: true });
    const first = (text = 'left marker in /tmp\ncannot write home: Read-only file system\n') => obs({ stdout: capture(text) }, { finished: true });
    expect(residue.judge(first(), { ...ctx }).verdict).toBe('inconclusive');
    expect(residue.judge({ ...first(), followUp: second('found token-residue-control in /tmp') }, ctx).verdict).toBe('held');
    // Phase 1 left nothing anywhere, or phase 2 could not see where phase 1 left its marker: nothing shown.
    expect(
      residue.judge({ ...first('cannot write /tmp: Read-only file system\n'), followUp: second('found token-residue-control in /tmp') }, ctx).reason,
    ).toMatch(/phase 1 left no marker anywhere/);
    expect(
      residue.judge({ ...first('left marker in /tmp\nleft marker in /dev/shm\n'), followUp: second('found token-residue-control in /tmp') }, ctx).reason,
    ).toMatch(/not found in \/dev\/shm/);
    // Phase 2 did not find even its own marker: its search cannot see.
    expect(residue.judge(obs({}, { finished: true, followUp: second('nothing') }), ctx).verdict).toBe('inconclusive');
    expect(residue.judge(obs({}, { finished: true, followUp: second('found residue-abc123 in /tmp') }), ctx).verdict).toBe('crossed');
    expect(residue.judge(obs({}, { finished: true, followUp: obs({}, { attempted: false }) }), ctx).verdict).toBe('inconclusive');
  });

  it("no survivor's name is in its payload's arguments: a launcher's command line carries them, and the host's scan would take it for the survivor", () => {
    const watching = securitySuite.filter((p) => p.watchSurvivor);
    expect(watching.map((p) => p.id).sort()).toEqual(['kernel-identity', 'survive-teardown']);
    for (const p of watching) {
      const args = JSON.stringify({ nonce: ctx.nonce, ...(p.args?.(ctx) ?? {}) });
      expect(args, p.id).not.toContain(survivorName(ctx.nonce, p.kernelCarriers === 'marked-program'));
    }
  });

  it('survive-teardown on a user-space kernel: the daemon seen by its mark in its own address space, then its processes looked up after destroy', () => {
    const identity = (pid: number) => ({
      pid,
      command: '',
      realUid: 65534,
      effectiveUid: 65534,
      capEff: '0000000000240000',
      noNewPrivs: 1,
      seccomp: 2,
      peakRssBytes: null,
      hostUserNamespace: false,
    });
    const tie =
      "this execution's program mark in host pid 12's memory at 7f20-7f30, mapped from /memfd:runsc-memory, and not its nonce (8192 bytes read, every present page)";
    const userSpaceKernel = {
      kernel: 'gVisor (runsc)',
      tie: 'nonce in pid 9',
      addressSpaces: [identity(9)],
      kernels: [identity(8)],
      fileServers: [],
      marked: { tie, addressSpace: identity(12), kernel: identity(8), started: { addressSpace: 500, kernel: 400 } },
    };
    const after = (space: boolean, kernel: boolean) => [
      { pid: 12, role: 'address space' as const, running: space },
      { pid: 8, role: 'kernel' as const, running: kernel },
    ];
    const ran = capture('daemon started\n');
    const judge = (exec: Parameters<typeof obs>[0], rest: Parameters<typeof obs>[1]) => surviveTeardown.judge(obs(exec, { finished: true, ...rest }), ctx);
    const held = judge({ userSpaceKernel, stdout: ran }, { carriersAfterDestroy: after(false, false) });
    expect(held.verdict).toBe('held');
    expect(held.reason).toMatch(
      /^the host saw the daemon running on a user-space kernel \(this execution's program mark in host pid 12's memory.*\); after destroy its address space \(pid 12\) and kernel \(pid 8\) no longer ran/,
    );
    // Its address space or its kernel still running after destroy: the daemon outlived the box.
    expect(judge({ userSpaceKernel, stdout: ran }, { carriersAfterDestroy: after(false, true) }).reason).toMatch(
      /^the user-space kernel's kernel \(pid 8\) that ran the daemon still ran 10 s after the environment was destroyed: the daemon can live on in it$/,
    );
    expect(judge({ userSpaceKernel, stdout: ran }, { carriersAfterDestroy: after(true, true) }).verdict).toBe('crossed');
    // Never held without the look after destroy, without the mark, or without the payload's word that the daemon started.
    expect(judge({ userSpaceKernel, stdout: ran }, {}).verdict).toBe('inconclusive');
    expect(judge({ userSpaceKernel: { ...userSpaceKernel, marked: undefined }, stdout: ran }, { carriersAfterDestroy: after(false, false) }).verdict).toBe(
      'inconclusive',
    );
    expect(judge({ userSpaceKernel }, { carriersAfterDestroy: after(false, false) }).verdict).toBe('inconclusive');
    // The daemon's address space never found, but the kernel the payload ran on outlived destroy: crossed; gone: still inconclusive.
    const unmarked = { ...userSpaceKernel, marked: undefined, kernelStarted: 400 };
    const kernelOnly = (running: boolean) => [{ pid: 8, role: 'kernel' as const, running }];
    expect(judge({ userSpaceKernel: unmarked, stdout: ran }, { carriersAfterDestroy: kernelOnly(true) }).reason).toMatch(
      /^the user-space kernel's kernel \(pid 8\) that ran the payload still ran 10 s after the environment was destroyed/,
    );
    expect(judge({ userSpaceKernel: unmarked, stdout: ran }, { carriersAfterDestroy: kernelOnly(false) }).verdict).toBe('inconclusive');
  });
});
