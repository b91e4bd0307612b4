/**
 * Podman through the Docker backend (`--docker-socket` at Podman's Docker-compatible API): a private
 * `podman system service` with its own storage, started and removed by this file. What differs from
 * Docker and is handled: the image tag on import, the tmpfs size option, conmon monitors under a cgroup
 * parent (not used with Podman), a download API that follows a final symlink (the link is stat'ed first).
 * Network probes are not-applicable: the daemon is not inside a lab.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBinary } from '../../core/find-binary.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const podman = await findBinary('podman');
const init = await findBinary('catatonit', ['/usr/libexec/podman', '/usr/bin']);
const skip =
  process.getuid?.() !== 0
    ? 'needs root'
    : !podman
      ? 'podman is not installed (apt-get install -y podman catatonit)'
      : !init
        ? 'catatonit is not installed (apt-get install -y catatonit)'
        : undefined;

let dir = '';
let service: ChildProcess | undefined;
/** Podman makes `libpod_parent` in every controller: removed at the end only where it did not exist before. */
const podParents = (): string[] =>
  readdirSync('/sys/fs/cgroup')
    .map((c) => `/sys/fs/cgroup/${c}/libpod_parent`)
    .filter((d) => existsSync(d));
let parentsBefore = new Set<string>();
const flags = (): string[] => [
  '--root',
  join(dir, 'root'),
  '--runroot',
  join(dir, 'runroot'),
  '--tmpdir',
  join(dir, 'tmp'),
  '--network-config-dir',
  join(dir, 'net'),
  '--cgroup-manager',
  'cgroupfs',
  '--events-backend',
  'file',
  '--storage-driver',
  'overlay',
];
const env = (): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin', CONTAINERS_CONF: join(dir, 'containers.conf') });
const sock = (): string => join(dir, 'podman.sock');

function answers(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: sock(), path: '/v1.41/version', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Processes whose command line names this file's private directory: the service and its conmon monitors. */
function ours(): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

beforeAll(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'sc-podman-'));
  parentsBefore = new Set(podParents());
  // This machine grants no CAP_SYS_RESOURCE: Podman's default rlimits (above the hard limit) would fail every start.
  // runc, not Podman's preferred crun: Debian 12's crun 1.8.1 (the podman preset's runtime) refuses hybrid cgroups.
  await writeFile(join(dir, 'containers.conf'), '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n');
  // In its own directory: its conmon monitors write their `oom` marker files into the working directory.
  service = spawn(podman!, [...flags(), 'system', 'service', '--time=0', `unix://${sock()}`], { cwd: dir, env: env(), stdio: 'ignore' });
  for (let i = 0; i < 100 && !(existsSync(sock()) && (await answers())); i++) await sleep(200);
}, 60_000);

afterAll(async () => {
  if (!dir) return;
  await execa(podman!, [...flags(), 'rm', '-af', '-t', '0'], { env: env(), reject: false, timeout: 60_000 });
  service?.kill('SIGKILL');
  for (const pid of ours()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(dir))
    .reverse();
  for (const m of mounts) await execa('umount', ['-l', m], { reject: false });
  await rm(dir, { recursive: true, force: true });
  // The cgroups our service made (empty now that its containers and monitors are gone): children first.
  for (const parent of podParents().filter((d) => !parentsBefore.has(d))) {
    for (const child of readdirSync(parent, { withFileTypes: true }).filter((e) => e.isDirectory()))
      await rmdir(join(parent, child.name)).catch(() => undefined);
    await rmdir(parent).catch(() => undefined);
  }
}, 120_000);

describe.skipIf(skip !== undefined)('podman through the docker backend (--docker-socket)', () => {
  it('the private podman service answers the Docker API', async () => {
    expect(await answers()).toBe(true);
  });

  it('docker-hardened on podman passes adapter check', async () => {
    const cfg = join(dir, 'sock.yaml');
    await writeFile(cfg, `socketPath: ${sock()}\n`);
    const r = await sandcheck(['adapter', 'check', '--backend', 'docker-hardened', '--backend-config', cfg, '--policy', 'ci']);
    expect(r.exitCode, r.all).toBe(0);
  }, 300_000);

  it('gives the docker-hardened verdicts: held, links reported and never followed, network not-applicable (no lab)', async () => {
    const out = await tempOut();
    const probes = [
      'identity-uid',
      'secret-decoy-file',
      'fork-bomb',
      'memory-bomb',
      'download-api-links',
      'export-symlink-host',
      'read-only-input',
      'metadata-ipv4',
    ];
    const r = await sandcheck(['run', '--backend', 'docker-hardened', '--docker-socket', sock(), '--policy', 'ci', '--out', out, '--only', ...probes]);
    const { security } = await readCards(out);
    const verdict = Object.fromEntries(security.results.map((x) => [x.id, x.verdict]));
    for (const id of probes.filter((p) => p !== 'metadata-ipv4')) expect(verdict[id], `${id}\n${r.all}`).toBe('held');
    expect(verdict['metadata-ipv4']).toBe('not-applicable');
  }, 600_000);
});
