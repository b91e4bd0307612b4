/**
 * Issue 10 findings 2 (disk-fill) and 3 (probes that could not cross), judged on fixed observations: held
 * needs the probe's own control, seen from outside, near its limit; anything else is inconclusive.
 */
import { capture, fakeObservation } from '../helpers/observation.js';
import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import type { GotFile } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { Observation, ProbeContext } from '../../model/probe.js';
import type { ExecObservation } from '../../model/observation.js';
import { makeCanaries } from '../../lab/canaries.js';
import { cpuQuota } from '../../probes/cpu-quota/probe.js';
import { diskFill, FILL_FILE } from '../../probes/disk-fill/probe.js';
import { identitySetuid } from '../../probes/identity-setuid/probe.js';
import { attachPosture } from '../../lab/host-process.js';
import { readOnlyInput, WRITE_CONTROL } from '../../probes/read-only-input/probe.js';
import type { HostFileState } from '../../lab/host-read.js';
import { createHash } from 'node:crypto';

const MiB = 2 ** 20;
const ctxWith = (policy: Policy): ProbeContext => ({
  policy,
  runId: 'rcause',
  nonce: 'abc123',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
});
const ctx = ctxWith(CI_POLICY);
const obs = (exec: Partial<ExecObservation>, rest: Partial<Observation> = {}): Observation =>
  fakeObservation({ wallMs: 2000, ...exec }, { finished: true, ...rest });

const fill = (size: number): GotFile[] => [{ path: FILL_FILE, kind: 'file', size, note: 'larger than the cap; not read' }];
const memory = (oomKills: number) => ({ source: 'cgroup v1 test', memoryLimitBytes: 512 * MiB, memoryPeakBytes: 512 * MiB, oomKills });

describe('disk-fill: held only when the disk limit itself was reached, seen from outside', () => {
  it('the finding: an exit code of 28 or an OOM kill at 448 MiB is not held', () => {
    expect(diskFill.judge(obs({ exitCode: 28 }), ctx).verdict).toBe('inconclusive');
    const oom = diskFill.judge(
      obs(
        { exitCode: 137, backendReport: { timedOut: false, oomKilled: true, outputTruncated: false }, resources: memory(1) },
        { artifacts: fill(448 * MiB), finished: false },
      ),
      ctx,
    );
    expect(oom.verdict).toBe('inconclusive');
    expect(oom.reason).toMatch(/memory limit stopped the writer first/);
  });

  it('held: the box filesystem filled near the limit with no OOM kill and no clock stop', () => {
    const held = diskFill.judge(obs({ exitCode: 0, resources: memory(0) }, { artifacts: fill(988 * MiB) }), ctx);
    expect(held.verdict).toBe('held');
    expect(held.evidence.some((e) => e.source === 'outside' && e.witness === 'box-disk')).toBe(true);
    // The same size stopped by a clock, or far short of the limit, proves nothing.
    expect(diskFill.judge(obs({ killedBy: 'harness-deadline', resources: memory(0) }, { artifacts: fill(988 * MiB) }), ctx).verdict).toBe('inconclusive');
    expect(diskFill.judge(obs({ resources: memory(0) }, { artifacts: fill(300 * MiB) }), ctx).verdict).toBe('inconclusive');
    // A per-file size limit (firejail --rlimit-fsize, docker --ulimit fsize) at the disk limit's size: a second file passes it.
    const perFile = diskFill.judge(
      obs({ exitCode: 0, resources: memory(0), stdout: capture('write stopped after 1000 MiB: EFBIG\n') }, { artifacts: fill(1000 * MiB) }),
      ctx,
    );
    expect(`${perFile.verdict}: ${perFile.reason}`).toMatch(/^inconclusive: a per-file size limit \(EFBIG\)/);
    expect(
      diskFill.judge(
        obs({ exitCode: 0, resources: memory(0), stdout: capture('write stopped after 1000 MiB: ENOSPC\n') }, { artifacts: fill(1000 * MiB) }),
        ctx,
      ).verdict,
    ).toBe('held');
  });

  it('crossed: more than the limit on the box filesystem', () => {
    expect(diskFill.judge(obs({}, { artifacts: fill(1280 * MiB) }), ctx).verdict).toBe('crossed');
  });

  it('where the harness reads the workspace on the host, its own lstat decides: a download API that under-reports earns no held', () => {
    const onHost = (size: number) => ({
      hostRead: {
        before: [{ path: FILL_FILE, kind: 'missing' as const }],
        after: [{ path: FILL_FILE, kind: 'file' as const, size, dev: 1, ino: 2, sha256: 'x' }],
      },
    });
    const ok = { exitCode: 0, resources: memory(0) };
    expect(diskFill.judge(obs(ok, { artifacts: fill(988 * MiB), ...onHost(988 * MiB) }), ctx).verdict).toBe('held');
    // The API says 988 MiB, the host holds 1280 MiB: crossed on the host's number.
    expect(diskFill.judge(obs(ok, { artifacts: fill(988 * MiB), ...onHost(1280 * MiB) }), ctx).verdict).toBe('crossed');
    // Any other disagreement: the measurement is not trusted.
    const lie = diskFill.judge(obs(ok, { artifacts: fill(988 * MiB), ...onHost(990 * MiB) }), ctx);
    expect(`${lie.verdict}: ${lie.reason}`).toMatch(/^inconclusive: the download API's size of the fill file \(\d+ bytes\) is not the host's own/);
    // The file not seen on the host (a workspace the host side does not show): the API's number stands.
    const unseen = { hostRead: { before: [{ path: FILL_FILE, kind: 'missing' as const }], after: [{ path: FILL_FILE, kind: 'missing' as const }] } };
    expect(diskFill.judge(obs(ok, { artifacts: fill(988 * MiB), ...unseen }), ctx).verdict).toBe('held');
  });
});

describe('cpu-quota: CPU time from the cgroup against cpus × elapsed', () => {
  const low = ctxWith({ ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: 0.1 } });
  const cpu = (usageS: number, throttled: number) => ({
    resources: { source: 'cgroup v1 test', cpuUsageNs: usageS * 1e9, cpuThrottledPeriods: throttled, cpuQuotaCores: 0.1 },
  });
  it('crossed past the bound, held within it with throttling, inconclusive without a counter or a throttled period', () => {
    expect(cpuQuota.judge(obs({ wallMs: 2600, ...cpu(1.4, 0) }), low).verdict).toBe('crossed');
    expect(cpuQuota.judge(obs({ wallMs: 3000, ...cpu(0.3, 30) }), low).verdict).toBe('held');
    expect(cpuQuota.judge(obs({ wallMs: 3000, ...cpu(0.2, 0) }), low).verdict).toBe('inconclusive');
    // Throttled within the bound, but by a quota twice the policy's: not the policy's control.
    const wide = { resources: { ...cpu(0.3, 30).resources, cpuQuotaCores: 0.2 } };
    expect(cpuQuota.judge(obs({ wallMs: 3000, ...wide }), low).reason).toMatch(/by a quota of 0\.2 cores, above the policy's 0\.1/);
    const blind = cpuQuota.judge(obs({ wallMs: 3000 }), low);
    expect(blind.verdict).toBe('inconclusive');
    expect(blind.reason).toMatch(/no cgroup CPU counter/);
  });
  it('a policy of as many cpus as the host has cores cannot be tested here: not-applicable before it runs, whatever was measured', () => {
    const wide = ctxWith({ ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: availableParallelism() } });
    expect(cpuQuota.hostPrecondition?.(wide)).toMatch(/cannot be tested on this machine/);
    expect(cpuQuota.judge(obs({ wallMs: 3000, ...cpu(100, 0) }), wide).verdict).toBe('not-applicable');
  });
});

describe('read-only-input: the bytes of every input, from outside', () => {
  // What the box leaves on a hardened backend: the read-only inputs as put, the writable control with the answer appended.
  const inputs = (ctxArg: ProbeContext): GotFile[] =>
    (readOnlyInput.files?.(ctxArg) ?? []).map((f) => {
      const content = f.path === WRITE_CONTROL ? Buffer.concat([f.content, Buffer.from('token-write-control\n')]) : f.content;
      return { path: f.path, kind: 'file', size: content.byteLength, content };
    });
  it('held when all are byte-identical; crossed when one changed, vanished or became a link; inconclusive without the finish answer', () => {
    const all = inputs(ctx);
    expect(all).toHaveLength(8);
    expect(readOnlyInput.judge(obs({}, { artifacts: all }), ctx).verdict).toBe('held');
    const changed = all.map((f, i) => (i === 0 ? { ...f, content: Buffer.from('changed') } : f));
    expect(readOnlyInput.judge(obs({}, { artifacts: changed }), ctx).verdict).toBe('crossed');
    expect(readOnlyInput.judge(obs({}, { artifacts: all.slice(1) }), ctx).verdict).toBe('crossed');
    const linked = all.map((f, i): GotFile => (i === 1 ? { path: f.path, kind: 'symlink', size: 0, linkTarget: '/proc/self/status' } : f));
    expect(readOnlyInput.judge(obs({}, { artifacts: linked }), ctx).verdict).toBe('crossed');
    expect(readOnlyInput.judge(obs({}, { artifacts: all, finished: false }), ctx).verdict).toBe('inconclusive');
  });

  it("a download API that hands back the uploaded copies (the box's writes unseen) earns no held", () => {
    const uploaded = (readOnlyInput.files?.(ctx) ?? []).map((f): GotFile => ({ path: f.path, kind: 'file', size: f.content.byteLength, content: f.content }));
    const j = readOnlyInput.judge(obs({}, { artifacts: uploaded }), ctx);
    expect(`${j.verdict}: ${j.reason}`).toMatch(/^inconclusive: the download API did not show the payload's write to a writable input/);
    const noControl = inputs(ctx).filter((f) => f.path !== WRITE_CONTROL);
    expect(readOnlyInput.judge(obs({}, { artifacts: noControl }), ctx).verdict).toBe('inconclusive');
  });

  describe('where the harness reads the workspace on the host itself (no writable control needed)', () => {
    const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
    // Nothing writable in the box: the API hands back the inputs as put and the control unchanged.
    const asPut = (readOnlyInput.files?.(ctx) ?? []).map((f): GotFile => ({ path: f.path, kind: 'file', size: f.content.byteLength, content: f.content }));
    const onHost = (): HostFileState[] =>
      (readOnlyInput.files?.(ctx) ?? [])
        .filter((f) => f.readOnly)
        .map((f, i) => ({ path: f.path, kind: 'file', dev: 2049, ino: 9000 + i, size: f.content.byteLength, sha256: sha(f.content) }));
    const boxSaw = (files: HostFileState[]): string =>
      `SANDCHECK-REPORT ${JSON.stringify({ inodes: Object.fromEntries(files.map((f) => [f.path, [f.dev, f.ino]])) })}\n`;
    const judge = (before: HostFileState[], after: HostFileState[], report: string) =>
      readOnlyInput.judge(obs({ stdout: capture(report) }, { artifacts: asPut, hostRead: { before, after } }), ctx);

    it('held: unchanged on the host, and the box named the very files the host read', () => {
      const j = judge(onHost(), onHost(), boxSaw(onHost()));
      expect(`${j.verdict}: ${j.reason}`).toMatch(/^held: .*read by the harness itself \(the box saw those very files: same device and inode\)/);
      expect(j.evidence.some((e) => e.source === 'outside' && e.witness === 'host-read' && /every read-only input unchanged/.test(e.detail))).toBe(true);
    });

    it('a host read the box is not bound to earns no held: other inodes (copies), no report, a put not as made', () => {
      const copies = onHost().map((f) => ({ ...f, ino: (f.ino ?? 0) + 1 }));
      expect(judge(onHost(), onHost(), boxSaw(copies)).verdict).toBe('inconclusive');
      expect(judge(onHost(), onHost(), '').verdict).toBe('inconclusive');
      const otherDevice = onHost().map((f) => ({ ...f, dev: 64 }));
      expect(judge(onHost(), onHost(), boxSaw(otherDevice)).verdict).toBe('inconclusive');
      const wrongPut = onHost().map((f, i) => (i === 0 ? { ...f, sha256: 'x' } : f));
      expect(judge(wrongPut, wrongPut, boxSaw(wrongPut)).verdict).toBe('inconclusive');
    });

    it('crossed when the host read shows a change the download API hid: bytes, a link, gone, replaced', () => {
      const base = onHost();
      const cases: [HostFileState[], RegExp][] = [
        [base.map((f, i) => (i === 0 ? { ...f, sha256: 'y', size: 5 } : f)), /bytes changed on the host/],
        [base.map((f, i) => (i === 1 ? { path: f.path, kind: 'other', note: 'a symbolic link' } : f)), /a symbolic link on the host/],
        [base.map((f, i) => (i === 2 ? { path: f.path, kind: 'missing' } : f)), /gone on the host/],
        [base.map((f, i) => (i === 3 ? { ...f, ino: 1 } : f)), /replaced on the host/],
      ];
      for (const [after, why] of cases) {
        const j = judge(base, after, boxSaw(base));
        expect(`${j.verdict}: ${j.reason}`).toMatch(why);
        expect(j.verdict).toBe('crossed');
      }
    });
  });
});

describe('identity-setuid: judged on the planted binary as the host saw it', () => {
  const proc = (command: string, realUid: number, effectiveUid: number) => ({
    pid: 7,
    command,
    realUid,
    effectiveUid,
    capEff: '0000000000000000',
    noNewPrivs: 1,
    seccomp: 0,
    peakRssBytes: null,
    hostUserNamespace: true,
  });
  it('crossed when it ran with euid 0 (setuid took effect), held when it ran as the box uid, inconclusive when never seen', () => {
    const crossed = identitySetuid.judge(obs({ hostProcesses: [proc('python3', 65529, 65529), proc('suid-sleep', 65529, 0)] }), ctx);
    expect(crossed.verdict).toBe('crossed');
    expect(crossed.reason).toMatch(/setuid bit took effect/);
    // Held needs the payload (its command line, read with its posture, carries the nonce) and a setuid-root file run.
    const payload = (cmdline = `python3 payload.py ${ctx.nonce}`) => {
      const id = proc('python3', 65529, 65529);
      attachPosture(id, {
        pid: 7,
        cmdline,
        sharedNamespaces: {},
        capBnd: '0',
        capAmb: '0',
        mounts: [],
        mountsTruncated: false,
        devNodes: [],
        devEntriesSeen: 0,
      });
      return id;
    };
    const planted = (mode: number, uid: number) => ({ ...proc('suid-sleep', 65529, 65529), executable: { mode, uid } });
    const held = identitySetuid.judge(obs({ hostProcesses: [payload(), planted(0o4755, 0)] }), ctx);
    expect(held.verdict).toBe('held');
    expect(held.evidence.some((e) => e.witness === 'host-proc-exe' && /mode 4755, owner uid 0/.test(e.detail))).toBe(true);
    // The backend dropped the setuid bit, or handed the file to the box's uid: the attack never ran.
    expect(identitySetuid.judge(obs({ hostProcesses: [payload(), planted(0o755, 0)] }), ctx).reason).toMatch(
      /not setuid-root as the host stats it \(mode 755, owner uid 0\)/,
    );
    expect(identitySetuid.judge(obs({ hostProcesses: [payload(), planted(0o4755, 65529)] }), ctx).verdict).toBe('inconclusive');
    expect(identitySetuid.judge(obs({ hostProcesses: [payload(), proc('suid-sleep', 65529, 65529)] }), ctx).verdict).toBe('inconclusive');
    // Not this execution's payload: another python3 and its child.
    expect(identitySetuid.judge(obs({ hostProcesses: [payload('python3 /opt/other.py'), planted(0o4755, 0)] }), ctx).verdict).toBe('inconclusive');
    expect(identitySetuid.judge(obs({ hostProcesses: [proc('python3', 65529, 65529)] }), ctx).verdict).toBe('inconclusive');
  });
});
