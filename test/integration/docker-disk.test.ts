/**
 * The Docker backends' disk-image workspace: an ext4 image of policy diskMb, loop-mounted on the host and bound at
 * /work, so the disk limit is reached before the memory limit (a tmpfs volume is charged to the memory cgroup and
 * the OOM killer stops the filler first). disk-fill held on docker-hardened and gvisor, the inputs' ownership and
 * modes kept, nothing left after destroy or a crash sweep; workspace: 'tmpfs' still gives the volume. A private
 * dockerd inside a lab of this file's own, as in docker-new-probes.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { access, constants, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeOwner } from '../../backends/bwrap/workspace.js';
import type { BackendContext, ExecResult } from '../../model/backend-contract.js';
import createDockerBackend, {
  createDiskWorkspace,
  DEFAULT_LAB_DAEMON_ROOT,
  diskImageSupport,
  startLabDaemon,
  sweepDiskWorkspaces,
  type DockerBackend,
  type DockerEnvironment,
  type LabDaemon,
  type ProfileName,
} from '../../backends/docker/index.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, probeLabSupport, type LabSession } from '../../lab/lab-session.js';
import { securitySuite } from '../../suites/security.js';

const executable = (p: string): Promise<boolean> =>
  access(p, constants.X_OK).then(
    () => true,
    () => false,
  );

async function skipReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `Docker backends need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'needs root (a lab namespace, a private dockerd inside it, loop mounts)';
  if (!(await executable('/usr/sbin/dockerd')) && !(await executable('/usr/bin/dockerd'))) return 'dockerd is not installed (apt-get install -y docker.io)';
  const disk = await diskImageSupport();
  if ('problem' in disk) return disk.problem;
  const lab = await probeLabSupport();
  if (!lab.available) return `no lab: ${lab.reason}`;
  return undefined;
}

const SKIP = await skipReason();
const runId = `rdk${randomBytes(4).toString('hex')}`;
const byId = new Map(securitySuite.map((p) => [p.id, p]));

let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;
let stateDir = '';
const backends = new Map<string, DockerBackend>();

async function backendFor(profile: ProfileName, workspace?: 'tmpfs'): Promise<DockerBackend> {
  const key = `${profile}/${workspace ?? 'default'}`;
  let b = backends.get(key);
  if (!b) {
    if (!daemon) throw new Error('no lab daemon');
    b = await createDockerBackend({
      profile,
      socketPath: daemon.socketPath,
      labNetnsPath: daemon.netnsPath,
      runId,
      diskStateDir: stateDir,
      ...(workspace ? { workspace } : {}),
    });
    await b.preflight();
    backends.set(key, b);
  }
  return b;
}

async function runOn(backend: DockerBackend, ids: readonly string[]): Promise<Map<string, SecurityResult>> {
  if (!run) throw new Error('no run');
  const probes = ids.map((id) => {
    const p = byId.get(id);
    if (!p) throw new Error(`${id} is not in the security suite`);
    return p;
  });
  const { security } = await new Runner({ backend, policy: CI_POLICY, probes, run, concurrency: 1 }).run();
  return new Map(security.map((r) => [r.id, r]));
}

const ctxOf = (r: RunContext): BackendContext => ({
  runId: r.runId,
  controllerEnv: r.controllerEnv,
  scratchDir: r.scratchDir,
  ...(r.lab ? { lab: r.lab } : {}),
});

const explain = (r: SecurityResult | undefined): string =>
  r ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}] ${e.detail.slice(0, 200)}`).join('\n  ')}` : 'did not run';

/** Disk-image mounts (under this file's state directory) and loop devices backed by a disk image, naming `needle`. */
async function traces(needle: string): Promise<string[]> {
  const out = (await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => (l.split(' ')[1] ?? '').startsWith(`${stateDir}/`) && l.includes(needle));
  for (const dev of await readdir('/sys/block').catch(() => [] as string[])) {
    if (!dev.startsWith('loop')) continue;
    const backing = await readFile(`/sys/block/${dev}/loop/backing_file`, 'utf8').catch(() => '');
    if (backing.includes('docker-disk-') && backing.includes(needle)) out.push(`${dev} → ${backing.trim()}`);
  }
  return out;
}

async function execIn(env: DockerEnvironment, code: string): Promise<{ r: ExecResult; out: string }> {
  let out = '';
  const r = await env.exec({
    argv: ['python3', '-c', code],
    timeoutMs: 20_000,
    maxOutputBytes: 1 << 20,
    signal: new AbortController().signal,
    stdout: { write: (c) => (out += Buffer.from(c).toString('utf8')) },
    stderr: { write: (c) => (out += Buffer.from(c).toString('utf8')) },
  });
  return { r, out };
}

const STAT_WORK = `
import os, stat
for p in ['/work', '/work/ro.txt', '/work/suid', '/work/rw.txt']:
    s = os.lstat(p)
    print(p, oct(stat.S_IMODE(s.st_mode)), s.st_uid, s.st_gid)
print('fs', os.statvfs('/work').f_blocks * os.statvfs('/work').f_frsize)
`;

describe.skipIf(SKIP !== undefined)(`docker: the disk-image workspace${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), `sandcheck-${runId}-state-`));
    lab = await openLab(runId, packageRoot());
    daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: join(DEFAULT_LAB_DAEMON_ROOT, runId) });
    run = await openRunContext(runId, { lab });
  }, 180_000);

  afterAll(async () => {
    await run?.dispose().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await lab?.close().catch(() => undefined);
    await sweepDiskWorkspaces(stateDir).catch(() => undefined);
    if (stateDir !== '') await rm(stateDir, { recursive: true, force: true });
  }, 60_000);

  it('docker-hardened: /work is the sized ext4 image, root-owned 1777; inputs keep owner and mode; destroy leaves no mount, loop device or image', async () => {
    if (!run) throw new Error('no run');
    const b = await backendFor('docker-hardened');
    expect(b.description).toMatch(/workspace: sized ext4 image/);
    const env = (await b.create(CI_POLICY, ctxOf(run))) as DockerEnvironment;
    let destroyed = false;
    try {
      expect(env.volumeName).toBeUndefined();
      expect(await traces(`${runId}-${env.id}`)).toHaveLength(2); // the host mount and its loop device
      const files = [
        { path: 'ro.txt', content: new TextEncoder().encode('ro\n'), readOnly: true },
        { path: 'suid', content: new TextEncoder().encode('#!/bin/sh\n'), readOnly: true, mode: 0o4755 },
        { path: 'rw.txt', content: new TextEncoder().encode('rw\n') },
      ];
      await env.putFiles(files);
      const { r, out } = await execIn(env, STAT_WORK);
      expect(r.exitCode, out).toBe(0);
      expect(out).toContain('/work 0o1777 0 0');
      expect(out).toContain('/work/ro.txt 0o444 0 0');
      expect(out).toContain('/work/suid 0o4555 0 0');
      expect(out).toContain('/work/rw.txt 0o644 65529 65529');
      const size = Number(/^fs (\d+)$/m.exec(out)?.[1]);
      expect(size).toBeGreaterThan(0.95 * CI_POLICY.resources.diskMb * 1024 * 1024);
      expect(size).toBeLessThanOrEqual(CI_POLICY.resources.diskMb * 1024 * 1024);
      const left = await env.destroy();
      destroyed = true;
      expect(left.items).toEqual([]);
      expect(await traces(`${runId}-${env.id}`)).toEqual([]);
      expect(await readdir(stateDir)).toEqual([]);
      expect((await readdir(run.scratchDir)).filter((f) => f.includes(env.id))).toEqual([]);
    } finally {
      if (!destroyed) await env.destroy();
    }
  }, 120_000);

  it('disk-fill held on docker-hardened by the disk limit (not the memory limit), with read-only inputs and setuid held', async () => {
    const r = await runOn(await backendFor('docker-hardened'), ['disk-fill', 'read-only-input', 'identity-setuid']);
    for (const id of ['disk-fill', 'read-only-input', 'identity-setuid']) expect(r.get(id)?.verdict, explain(r.get(id))).toBe('held');
    expect(r.get('disk-fill')?.observation?.backendReport?.oomKilled, explain(r.get('disk-fill'))).toBe(false);
    expect(await traces(runId)).toEqual([]);
  }, 180_000);

  it('disk-fill held on gvisor (runsc serves the bound ext4 workspace)', async () => {
    if (!(await executable('/usr/bin/runsc'))) return;
    const r = await runOn(await backendFor('gvisor'), ['disk-fill']);
    expect(r.get('disk-fill')?.verdict, explain(r.get('disk-fill'))).toBe('held');
    expect(await traces(runId)).toEqual([]);
  }, 180_000);

  it("workspace: 'tmpfs' keeps the daemon's tmpfs volume (for daemons that cannot see this machine's mounts)", async () => {
    if (!run) throw new Error('no run');
    const b = await backendFor('docker-hardened', 'tmpfs');
    expect(b.description).toMatch(/workspace: sized tmpfs volume/);
    const env = (await b.create(CI_POLICY, ctxOf(run))) as DockerEnvironment;
    try {
      expect(env.volumeName).toBeDefined();
      expect(await traces(`${runId}-${env.id}`)).toEqual([]);
    } finally {
      expect((await env.destroy()).items).toEqual([]);
    }
  }, 60_000);

  it("a crash sweep removes a dead owner's workspace (mount, loop device, image) and keeps a live one", async () => {
    if (!run) throw new Error('no run');
    const support = await diskImageSupport();
    if ('problem' in support) throw new Error(support.problem);
    const scratch = run.scratchDir;
    const bytes = 16 * 1024 * 1024;
    const dead = await createDiskWorkspace({ stateDir, scratchDir: scratch, runId, envId: 'dead0001', bytes, mkfs: support.mkfs });
    const live = await createDiskWorkspace({ stateDir, scratchDir: scratch, runId, envId: 'a11ve001', bytes, mkfs: support.mkfs });
    const boot = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
    // An owner that cannot be alive: a pid above the kernel's default pid_max.
    await writeOwner(dead, {
      version: 1,
      runId,
      envId: 'dead0001',
      ownerPid: 4194000,
      ownerStartTime: 1,
      bootId: boot,
      mounted: true,
      ...(dead.image ? { image: dead.image } : {}),
      createdAt: new Date().toISOString(),
    });
    const report = await sweepDiskWorkspaces(stateDir);
    expect(report.removed).toEqual([`workspace ${runId}-dead0001`]);
    expect(await traces(`${runId}-dead0001`)).toEqual([]);
    expect(await stat(dead.image ?? '/nonexistent').catch(() => undefined)).toBeUndefined();
    expect(await traces(`${runId}-a11ve001`)).toHaveLength(2);
    const keep = await sweepDiskWorkspaces(stateDir, runId);
    expect(keep.removed).toEqual([]);
    // The live one (this process owns it) is removed only by its owner.
    const { removeDiskWorkspace } = await import('../../backends/docker/disk-workspace.js');
    expect(await removeDiskWorkspace(live, 'live')).toEqual([]);
    expect(await traces(runId)).toEqual([]);
  }, 60_000);
});
