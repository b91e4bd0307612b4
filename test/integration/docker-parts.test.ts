import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { selfOwner } from '../../backends/shared/process-owner.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex, PassThrough, Readable } from 'node:stream';
import * as tarStream from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { DockerApiError, type ContainerSpec, type DockerClient, type ExecSpec } from '../../backends/docker/client.js';
import { CappedDemux } from '../../backends/docker/demux.js';
import { DockerBackend, DockerOptionsSchema, PROFILES, capabilitiesFor, hostConfigFor, sweepStaleLabDaemons } from '../../backends/docker/index.js';
import { packEntries, readFirstEntry, readWantedEntries, workspaceSegments } from '../../backends/docker/tar.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';

/**
 * The docker backend's parts without a daemon: the multiplexed-stream demuxer, the hostile-tar reader,
 * the policy → HostConfig mapping, the declared capabilities, and the backend itself over a fake client.
 * (Pure unit tests; they live here because only test/integration/docker-*.test.ts belongs to this backend.)
 */

const frame = (type: number, data: string | Buffer): Buffer => {
  const body = Buffer.from(data);
  const h = Buffer.alloc(8);
  h[0] = type;
  h.writeUInt32BE(body.length, 4);
  return Buffer.concat([h, body]);
};

const sink = (): { write(c: Uint8Array): void; text(): string } => {
  const parts: Buffer[] = [];
  return { write: (c) => parts.push(Buffer.from(c)), text: () => Buffer.concat(parts).toString('utf8') };
};

describe('docker demux: the multiplexed exec stream, capped', () => {
  it('splits stdout and stderr frames even when headers and bodies are cut across chunks', () => {
    const out = sink();
    const err = sink();
    const d = new CappedDemux(1000, out, err, () => undefined);
    const all = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(1, 'world'), frame(3, '!')]);
    for (let i = 0; i < all.length; i += 3) d.feed(all.subarray(i, i + 3));
    expect(out.text()).toBe('hello world');
    expect(err.text()).toBe('oops!');
    expect(d.truncated).toBe(false);
    expect(d.forwarded).toBe(16);
  });

  it('forwards exactly the cap (stdout + stderr together), calls onCap once, and drains the rest', () => {
    const out = sink();
    const err = sink();
    let caps = 0;
    const d = new CappedDemux(10, out, err, () => caps++);
    d.feed(Buffer.concat([frame(1, 'abcdef'), frame(2, 'ghijkl'), frame(1, 'more'), frame(2, 'and more')]));
    expect(out.text() + err.text()).toBe('abcdefghij');
    expect(d.truncated).toBe(true);
    expect(caps).toBe(1);
    expect(d.seen).toBe(24);
  });
});

async function tarOf(entries: { header: tarStream.Header; body?: Buffer }[]): Promise<Buffer> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve) => {
    pack.on('data', (c: unknown) => {
      chunks.push(Buffer.from(c as Uint8Array));
    });
    pack.on('end', () => resolve(Buffer.concat(chunks)));
  });
  for (const e of entries) {
    if (e.body) pack.entry(e.header, e.body);
    else pack.entry(e.header);
  }
  pack.finalize();
  return done;
}

const header = (name: string, type: tarStream.Header['type'], extra: Partial<tarStream.Header> = {}): tarStream.Header => ({
  name,
  type,
  size: 0,
  mode: 0o644,
  mtime: new Date(0),
  linkname: '',
  uid: 0,
  gid: 0,
  uname: '',
  gname: '',
  devmajor: 0,
  devminor: 0,
  ...extra,
});

describe('docker tar: what comes out of the box is parsed as hostile data', () => {
  const opts = { maxContentBytes: 100, maxArchiveBytes: 4096, timeoutMs: 2000 };

  it('a regular file within the cap comes back with its bytes', async () => {
    const tar = await tarOf([{ header: header('result.txt', 'file', { size: 5 }), body: Buffer.from('hello') }]);
    const { entry } = await readFirstEntry(Readable.from([tar]), opts);
    expect(entry).toMatchObject({ name: 'result.txt', kind: 'file', size: 5 });
    expect(Buffer.from(entry?.content ?? []).toString()).toBe('hello');
  });

  it('a file past the cap is reported with its size, never read', async () => {
    const tar = await tarOf([{ header: header('big', 'file', { size: 300 }), body: Buffer.alloc(300, 1) }]);
    const { entry } = await readFirstEntry(Readable.from([tar]), opts);
    expect(entry).toMatchObject({ kind: 'file', size: 300 });
    expect(entry?.content).toBeUndefined();
    expect(entry?.note).toMatch(/larger than 100/);
  });

  it('symlinks and hardlinks are reported with their targets, devices and fifos by kind, nothing followed', async () => {
    const cases: [tarStream.Header, string][] = [
      [header('l', 'symlink', { linkname: '/etc/shadow' }), 'symlink'],
      [header('h', 'link', { linkname: 'other' }), 'hardlink'],
      [header('p', 'fifo'), 'fifo'],
      [header('c', 'character-device', { devmajor: 1, devminor: 3 }), 'device'],
      [header('d', 'directory', { mode: 0o755 }), 'directory'],
    ];
    for (const [h, kind] of cases) {
      const { entry } = await readFirstEntry(Readable.from([await tarOf([{ header: h }])]), opts);
      expect(entry?.kind, h.name).toBe(kind);
      expect(entry?.content).toBeUndefined();
      if (h.linkname) expect(entry?.linkTarget).toBe(h.linkname);
    }
  });

  it('garbage, an endless stream, and a stream past the byte cap give a problem, not an exception', async () => {
    const garbage = await readFirstEntry(Readable.from([Buffer.alloc(1024, 0x41)]), opts);
    expect(garbage.entry).toBeUndefined();
    expect(garbage.problem).toBeTruthy();
    const endless = new PassThrough();
    const slow = await readFirstEntry(endless, { ...opts, timeoutMs: 200 });
    expect(slow.problem).toMatch(/did not arrive/);
    // A header claiming a small file, followed by far more bytes than the archive cap, before any header completes.
    const flood = await readFirstEntry(Readable.from([Buffer.alloc(10_000, 0)]), { ...opts, maxArchiveBytes: 2048 });
    expect(flood.entry).toBeUndefined();
  });

  it('what the harness packs (files, sticky root-owned dirs) reads back the same', async () => {
    const tar = await packEntries([
      { name: 'input', type: 'directory', mode: 0o1777, uid: 0, gid: 0 },
      { name: 'input/a.csv', type: 'file', mode: 0o444, uid: 0, gid: 0, content: Buffer.from('x,y\n') },
    ]);
    const { entry } = await readFirstEntry(Readable.from([tar]), opts);
    expect(entry).toMatchObject({ name: 'input', kind: 'directory' });
  });

  it('a whole-workspace archive answers the wanted names only: bytes within the cap, sizes past it, links unfollowed, a name twice not at all', async () => {
    const tar = await tarOf([
      { header: header('work', 'directory') },
      { header: header('work/junk', 'file', { size: 90 }), body: Buffer.alloc(90, 7) },
      { header: header('work/a.txt', 'file', { size: 2 }), body: Buffer.from('aa') },
      { header: header('work/big', 'file', { size: 300 }), body: Buffer.alloc(300, 1) },
      { header: header('work/link', 'symlink', { linkname: '/etc/shadow' }) },
      { header: header('work/d', 'directory') },
      { header: header('work/twice', 'file', { size: 1 }), body: Buffer.from('1') },
      { header: header('work/twice', 'file', { size: 1 }), body: Buffer.from('2') },
    ]);
    const wanted = new Set(['work/a.txt', 'work/big', 'work/link', 'work/d', 'work/twice', 'work/missing']);
    const roomy = { ...opts, maxArchiveBytes: 64 * 1024 };
    const found = await readWantedEntries(Readable.from([tar]), wanted, roomy);
    expect([...found.keys()].sort()).toEqual(['work/a.txt', 'work/big', 'work/d', 'work/link']);
    expect(Buffer.from(found.get('work/a.txt')?.content ?? []).toString()).toBe('aa');
    expect(found.get('work/big')).toMatchObject({ kind: 'file', size: 300, note: expect.stringMatching(/larger than 100/) });
    expect(found.get('work/big')?.content).toBeUndefined();
    expect(found.get('work/link')).toMatchObject({ kind: 'symlink', linkTarget: '/etc/shadow' });
    expect(found.get('work/link')?.content).toBeUndefined();
    expect(found.get('work/d')?.kind).toBe('directory');
    // Past the archive cap, what was not reached is absent (the per-file path asks for it): never an exception.
    const capped = await readWantedEntries(Readable.from([tar.subarray(0, 2048), tar.subarray(2048)]), wanted, { ...opts, maxArchiveBytes: 2048 });
    expect(capped.has('work/d')).toBe(false);
    expect(await readWantedEntries(Readable.from([Buffer.from('not a tar at all'.repeat(64))]), wanted, roomy)).toEqual(new Map());
  });

  it('workspace paths: absolute paths and .. are refused before anything is sent', () => {
    expect(workspaceSegments('a/./b//c')).toEqual(['a', 'b', 'c']);
    for (const bad of ['/etc/passwd', '../x', 'a/../../x', '.', '']) expect(() => workspaceSegments(bad), bad).toThrow(SandcheckError);
  });
});

describe('docker profiles: policy → HostConfig, and honest capabilities', () => {
  const input = { policy: CI_POLICY, volumeName: 'v', gvisorRuntime: 'runsc', cgroupParent: '/sandcheck-docker-r1-abcd' };

  it('every profile gets the policy limits, memory+swap equal to memory, a sized workspace, no log files', () => {
    for (const p of Object.values(PROFILES)) {
      const hc = hostConfigFor(p, input);
      expect(hc.Memory).toBe(512 * 2 ** 20);
      expect(hc.MemorySwap).toBe(hc.Memory);
      expect(hc.NanoCpus).toBe(2e9);
      expect(hc.Mounts).toEqual([{ Type: 'volume', Source: 'v', Target: '/work', ReadOnly: false }]);
      expect(hc.LogConfig.Type).toBe('none');
      expect(hc.CgroupParent).toBe('/sandcheck-docker-r1-abcd');
    }
  });

  it('docker-default is docker run with limits only; hardened drops everything; gvisor adds runsc and no pids limit', () => {
    const d = hostConfigFor(PROFILES['docker-default'], input);
    expect(d).toMatchObject({ NetworkMode: 'bridge', ReadonlyRootfs: false, Init: false, PidsLimit: 64, Tmpfs: {} });
    expect(d.CapDrop).toBeUndefined();
    expect(d.SecurityOpt).toBeUndefined();
    const h = hostConfigFor(PROFILES['docker-hardened'], input);
    expect(h).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, Init: true, PidsLimit: 64, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] });
    expect(h.Tmpfs['/tmp']).toMatch(/size=1024m/);
    expect(h.Runtime).toBeUndefined();
    const g = hostConfigFor(PROFILES.gvisor, input);
    expect(g).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, Runtime: 'runsc', CapDrop: ['ALL'] });
    expect(g.PidsLimit).toBeUndefined();
  });

  it('capabilities: each profile declares what it does not enforce, with the reason', () => {
    const inLab = { inLab: true, endpoint: 'unix:///x' };
    const d = capabilitiesFor(PROFILES['docker-default'], CI_POLICY, inLab, false);
    for (const item of ['network.egress', 'identity.unprivileged', 'resources.diskMb', 'files.readOnlyInput', 'output.sanitized'] as const) {
      expect(d.enforces, item).not.toContain(item);
      expect(d.notEnforcedReasons?.[item], item).toBeTruthy();
    }
    const h = capabilitiesFor(PROFILES['docker-hardened'], CI_POLICY, inLab, false);
    // runc shares the host kernel, and nothing makes a path inside its workspace read-only or hides one: the items besides sanitized output hardened Docker cannot claim.
    expect([...h.enforces].sort()).toEqual(
      POLICY_ITEMS.filter((i) => i !== 'output.sanitized' && i !== 'isolation.separateKernel' && i !== 'files.protected' && i !== 'files.denyRead').sort(),
    );
    expect(h.notEnforcedReasons?.['files.protected']).toMatch(/read-only/);
    expect(h.notEnforcedReasons?.['files.denyRead']).toMatch(/hides no file/);
    expect(h.notEnforcedReasons?.['isolation.separateKernel']).toMatch(/host kernel/);
    const g = capabilitiesFor(PROFILES.gvisor, CI_POLICY, inLab, false);
    expect(g.enforces).not.toContain('resources.processes');
    expect(g.enforces).toContain('isolation.separateKernel');
    const allow: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['203.0.113.10:443'] } };
    expect(capabilitiesFor(PROFILES['docker-hardened'], allow, inLab, false).notEnforcedReasons?.['network.egress']).toMatch(/allowlist/);
  });

  it('assumePolicy claims everything a trusting team believes, but never network egress outside the lab', () => {
    const inLab = capabilitiesFor(PROFILES['docker-default'], CI_POLICY, { inLab: true, endpoint: 'x' }, true);
    expect(inLab.enforces).toContain('network.egress');
    expect(inLab.enforces).toContain('identity.unprivileged');
    const outside = capabilitiesFor(PROFILES['docker-default'], CI_POLICY, { inLab: false, endpoint: 'tcp://x' }, true);
    expect(outside.enforces).not.toContain('network.egress');
    expect(outside.notEnforcedReasons?.['network.egress']).toMatch(/not inside the run's lab/);
  });

  it('options are validated before anything runs', () => {
    expect(DockerOptionsSchema.safeParse({ profile: 'docker-hardened' }).success).toBe(true);
    expect(DockerOptionsSchema.safeParse({ profile: 'podman' }).success).toBe(false);
    expect(DockerOptionsSchema.safeParse({ profile: 'gvisor', socketPath: 'relative.sock' }).success).toBe(false);
    expect(DockerOptionsSchema.safeParse({ profile: 'gvisor', nope: 1 }).success).toBe(false);
  });
});

// ---------------------------------------------------------------- the backend over a fake client

/** A fake Engine API: one container at a time, execs answered by a script. */
class FakeClient implements DockerClient {
  readonly endpoint = 'fake://';
  readonly local = false;
  pingFails = false;
  calls: string[] = [];
  running = false;
  killed = 0;
  volumes = new Set<string>();
  containers = new Map<string, ContainerSpec>();
  /** What an exec writes, and whether it ends by itself. */
  script: { frames: Buffer[]; ends: boolean; exitCode: number } = { frames: [], ends: true, exitCode: 0 };
  private execSock: PassThrough | undefined;
  lastExec: ExecSpec | undefined;

  async ping(): Promise<void> {
    if (this.pingFails) throw new DockerApiError('connect ECONNREFUSED', undefined);
  }
  async info() {
    return {
      ServerVersion: 'fake',
      Driver: 'overlay2',
      CgroupDriver: 'cgroupfs',
      CgroupVersion: '1',
      Runtimes: { runc: {} },
      DefaultRuntime: 'runc',
      DockerRootDir: '/nonexistent',
    };
  }
  async createVolume(spec: { Name: string }) {
    this.volumes.add(spec.Name);
  }
  async removeVolume(name: string) {
    return this.volumes.delete(name);
  }
  async volumeExists(name: string) {
    return this.volumes.has(name);
  }
  async listVolumes() {
    return [];
  }
  async createContainer(spec: ContainerSpec) {
    this.containers.set('c1', spec);
    return 'c1';
  }
  async startContainer() {
    this.running = true;
  }
  async inspectContainer(id: string) {
    if (!this.containers.has(id)) return undefined;
    return {
      Id: id,
      State: { Status: this.running ? 'running' : 'exited', Running: this.running, Pid: 0, ExitCode: this.running ? 0 : 137, OOMKilled: false, Error: '' },
      HostConfig: {},
    };
  }
  async killContainer() {
    this.killed++;
    this.running = false;
    this.execSock?.end();
  }
  async removeContainer(id: string) {
    this.running = false;
    return this.containers.delete(id);
  }
  async listContainers() {
    return [];
  }
  async listNetworks() {
    return [];
  }
  async removeNetwork() {
    return false;
  }
  async putArchive(_id: string, path: string) {
    this.calls.push(`put ${path}`);
  }
  async getArchive() {
    return undefined;
  }
  async statPath() {
    return undefined;
  }
  async createExec(_id: string, spec: ExecSpec) {
    this.lastExec = spec;
    return 'e1';
  }
  async startExec(): Promise<Duplex> {
    const s = new PassThrough();
    this.execSock = s;
    setImmediate(() => {
      for (const f of this.script.frames) s.write(f);
      if (this.script.ends) s.end();
    });
    return s;
  }
  async inspectExec() {
    return { Running: false, ExitCode: this.killed > 0 ? 137 : this.script.exitCode, Pid: 0 };
  }
  async inspectImage() {
    return { Id: 'sha256:x', Labels: {} };
  }
  async importImage() {}
  async listImages() {
    return [];
  }
  async removeImage() {
    return false;
  }
}

function fakeBackend(client: FakeClient, profile: 'docker-hardened' | 'docker-default' = 'docker-hardened'): DockerBackend {
  return new DockerBackend({ opts: DockerOptionsSchema.parse({ profile }), client, image: async () => 'img:1' });
}

const ctx = { runId: 'rfake1', controllerEnv: { AWS_SECRET_ACCESS_KEY: 'SCNRYdecoy' }, scratchDir: tmpdir() };

async function execOn(env: Awaited<ReturnType<DockerBackend['create']>>, timeoutMs = 5000, maxOutputBytes = 1000) {
  const out = sink();
  const err = sink();
  const r = await env.exec({
    argv: ['python3', 'payload.py'],
    env: { A: 'b' },
    timeoutMs,
    maxOutputBytes,
    stdout: out,
    stderr: err,
    signal: new AbortController().signal,
  });
  return { r, out: out.text(), err: err.text() };
}

describe('docker backend over a fake client', () => {
  it('preflight: an unreachable daemon is BACKEND_UNAVAILABLE with a hint', async () => {
    const c = new FakeClient();
    c.pingFails = true;
    const err = await fakeBackend(c)
      .preflight()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('BACKEND_UNAVAILABLE');
    expect((err as SandcheckError).hint).toMatch(/dockerd/);
  });

  it('create: one labelled container with a keep-alive main process and a labelled workspace volume; the controller env never goes in', async () => {
    const c = new FakeClient();
    const env = await fakeBackend(c).create(CI_POLICY, ctx);
    const spec = c.containers.get('c1');
    expect(spec?.Labels['sandcheck.run']).toBe('rfake1');
    expect(spec?.User).toBe('65529:65529');
    expect(spec?.Entrypoint[0]).toBe('python3');
    expect(JSON.stringify(spec?.Env)).not.toContain('SCNRYdecoy');
    expect(spec?.HostConfig.Mounts[0]?.Source).toMatch(/^sandcheck-rfake1-[0-9a-f]{8}-work$/);
    expect([...c.volumes]).toEqual([spec?.HostConfig.Mounts[0]?.Source]);
    await env.putFiles([{ path: 'payload.py', content: Buffer.from('print(1)'), readOnly: true }]);
    expect(c.calls).toEqual(['put /work']);
    const { r, out } = await (async () => {
      c.script = { frames: [frame(1, 'hi\n')], ends: true, exitCode: 0 };
      return execOn(env);
    })();
    expect(r).toMatchObject({ exitCode: 0, signal: null, timedOut: false, outputTruncated: false, oomKilled: 'unknown' });
    expect(out).toBe('hi\n');
    expect(c.lastExec).toMatchObject({ Cmd: ['python3', 'payload.py'], Env: ['A=b'], User: '65529:65529', WorkingDir: '/work', AttachStdin: false });
    expect((await env.destroy()).items).toEqual([]);
    expect(c.containers.size).toBe(0);
    expect(c.volumes.size).toBe(0);
  });

  it("the backend's own wall clock kills the container (timedOut, SIGKILL); the environment is then spent", async () => {
    const c = new FakeClient();
    const env = await fakeBackend(c).create(CI_POLICY, ctx);
    c.script = { frames: [frame(1, 'sleeping\n')], ends: false, exitCode: 0 };
    // Cause, not time: the backend's own timer fired (timedOut) and killed the container once.
    const { r } = await execOn(env, 200);
    expect(r).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: 137 });
    expect(c.killed).toBe(1);
    const again = await execOn(env);
    expect(again.r.startError).toMatch(/not running/);
    await env.destroy();
  });

  it('the output cap kills the container once passed and marks the result truncated', async () => {
    const c = new FakeClient();
    const env = await fakeBackend(c).create(CI_POLICY, ctx);
    c.script = { frames: [frame(1, 'x'.repeat(600)), frame(2, 'y'.repeat(600))], ends: false, exitCode: 0 };
    const { r, out, err } = await execOn(env, 5000, 1000);
    expect(out.length + err.length).toBe(1000);
    expect(r).toMatchObject({ outputTruncated: true, signal: 'SIGKILL', timedOut: false });
    expect(c.killed).toBe(1);
    await env.destroy();
  });
});

describe('lab daemon crash sweep (no daemon needed)', () => {
  it('removes a run directory whose owner is dead, keeps a live one and anything without an ownership record', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sandcheck-labd-'));
    try {
      const me = await selfOwner();
      const bootId = me.bootId;
      const owner = (pid: number, start: number) =>
        JSON.stringify({
          version: 1,
          runId: 'r1',
          ownerPid: pid,
          ownerStartTime: start,
          bootId,
          netnsPath: '/run/netns/sc-r1',
          createdAt: new Date().toISOString(),
        });
      await mkdir(join(root, 'dead', 'data'), { recursive: true });
      await writeFile(join(root, 'dead', 'owner.json'), owner(4194000, 1));
      await mkdir(join(root, 'foreign'));
      await writeFile(join(root, 'foreign', 'something'), 'x');
      await mkdir(join(root, 'live'));
      await writeFile(join(root, 'live', 'owner.json'), owner(me.pid, me.startTime));
      const report = await sweepStaleLabDaemons(root);
      expect(report.removed).toEqual([join(root, 'dead')]);
      expect(report.kept.map((k) => k.dir).sort()).toEqual([join(root, 'foreign'), join(root, 'live')]);
      expect((await readdir(root)).sort()).toEqual(['foreign', 'live']);
      expect(await stat(join(root, 'dead')).catch(() => undefined)).toBeUndefined();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
  it.skipIf(process.getuid?.() !== 0 || !existsSync('/sys/fs/cgroup/pids/cgroup.procs'))(
    "a dead daemon's containers named by its data root: their processes, which outlive a killed daemon and its shims, are killed",
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'sandcheck-labd-'));
      const id = randomBytes(32).toString('hex');
      // A container's cgroup as a daemon with a cgroup parent makes it (v1 pids hierarchy), holding a stand-in process.
      const parent = `/sys/fs/cgroup/pids/sc-labd-test-${id.slice(0, 8)}`;
      const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
      const ended = new Promise<NodeJS.Signals | null>((r) => sleeper.once('exit', (_code, signal) => r(signal)));
      try {
        await mkdir(join(parent, id), { recursive: true });
        await writeFile(join(parent, id, 'cgroup.procs'), `${sleeper.pid ?? ''}`);
        const me = await selfOwner();
        await mkdir(join(root, 'dead', 'data', 'containers', id), { recursive: true });
        await writeFile(
          join(root, 'dead', 'owner.json'),
          JSON.stringify({
            version: 1,
            runId: 'r1',
            ownerPid: 4194000,
            ownerStartTime: 1,
            bootId: me.bootId,
            netnsPath: '/run/netns/sc-r1',
            createdAt: new Date().toISOString(),
          }),
        );
        const report = await sweepStaleLabDaemons(root);
        expect(report.removed).toEqual([join(root, 'dead')]);
        expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r('still running'), 5000))])).toBe('SIGKILL');
      } finally {
        sleeper.kill('SIGKILL');
        await ended;
        await rmdir(join(parent, id)).catch(() => undefined);
        await rmdir(parent).catch(() => undefined);
        await rm(root, { recursive: true, force: true });
      }
    },
  );
});
