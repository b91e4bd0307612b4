import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { z } from 'zod';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import { onProcessExit } from '../../lab/netns/exit-hook.js';
import { findBinary } from '../../core/find-binary.js';
import { commOf, readStat } from '../shared/host-proc.js';
import { killGroup, killQuietly } from '../shared/process-kill.js';
import { ownerAlive, selfOwner } from '../shared/process-owner.js';
import type { DockerClient } from './client.js';
import { cmdlineOf } from './host.js';

/**
 * A private Docker daemon inside the run's lab network namespace. Everything it creates (docker0, its
 * NAT rules, every bridge container's traffic) lives in the lab, where every address is a decoy. It has
 * its own socket, data-root, exec-root, pidfile and config file under one run directory, its own
 * managed containerd, and no registry access is ever attempted (images are imported, never pulled).
 */

export const DEFAULT_LAB_DAEMON_ROOT = '/var/lib/sandcheck/lab-docker';
const SAFE_RUN = /^[a-z0-9][a-z0-9_.-]{0,40}$/;
const TOOL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Tools are looked up in the order of the PATH the daemon itself gets (local ones first). */
const TOOL_DIRS = TOOL_PATH.split(':');
/** The kernel's limit for a unix socket path is 108 bytes; containerd's socket lies deeper than ours. */
const MAX_SOCKET_PATH = 90;

export interface StartLabDaemonOptions {
  runId: string;
  /**
   * The lab's namespace, e.g. /run/netns/sc-<runId>: the daemon is started in it with `nsenter --net`.
   * Without one (a run without a lab) the daemon gets a fresh, empty network namespace (`unshare --net`):
   * its containers can reach nothing at all, never the host's network.
   */
  netnsPath?: string;
  /** A run-specific directory for socket, data-root, exec-root, pidfile and logs; created, removed by stop(). */
  dir: string;
  /** 'auto' tries overlay2 and falls back to vfs when the daemon cannot use it. */
  storageDriver?: 'auto' | 'overlay2' | 'vfs';
  /** Register gVisor as runtime "runsc" (with --network=none) when /usr/bin/runsc exists. Default true. */
  gvisor?: boolean;
  startTimeoutMs?: number;
  /**
   * More environment for dockerd: the run's decoy credentials (`controllerEnv`), where a real control plane
   * keeps its own. A box that can read /proc/<dockerd>/environ (PidMode host, root) shows them.
   */
  env?: Readonly<Record<string, string>>;
}

export interface LabDaemonStopReport {
  /** What could not be cleaned up, or had to be killed; empty when all went as planned. */
  leftovers: string[];
  stopMs: number;
}

export interface LabDaemon {
  socketPath: string;
  /** The lab's namespace; undefined when the daemon has an empty namespace of its own. */
  netnsPath: string | undefined;
  dir: string;
  pid: number;
  storageDriver: string;
  runtimes: string[];
  /** Spawn until the socket answered /_ping (ms). */
  startMs: number;
  client: DockerClient;
  /** Idempotent: removes its containers, stops it (SIGTERM, then SIGKILL), kills any shim or runsc of it, unmounts and removes its directory. */
  stop(): Promise<LabDaemonStopReport>;
}

const OwnerSchema = z.strictObject({
  version: z.literal(1),
  runId: z.string(),
  ownerPid: z.number().int(),
  ownerStartTime: z.number().int(),
  bootId: z.string(),
  netnsPath: z.string().nullable(),
  createdAt: z.string(),
});

async function netnsInode(path: string): Promise<number | undefined> {
  return (await stat(path).catch(() => undefined))?.ino;
}

async function processNetnsInode(pid: number): Promise<number | undefined> {
  const link = await readlink(`/proc/${pid}/ns/net`).catch(() => undefined);
  const m = /^net:\[(\d+)\]$/.exec(link ?? '');
  return m ? Number(m[1]) : undefined;
}

async function tail(file: string, bytes = 2000): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.slice(-bytes);
}

/** The most telling line of a failed daemon's log. */
function logReason(log: string): string {
  const lines = log.split('\n').filter((l) => /level=(fatal|error)|failed to start daemon/i.test(l));
  const last = lines[lines.length - 1] ?? log.split('\n').filter(Boolean).pop() ?? '';
  return (/msg="([^"]*)"/.exec(last)?.[1] ?? last).slice(0, 400);
}

interface Layout {
  dir: string;
  socket: string;
  dataRoot: string;
  execRoot: string;
  pidfile: string;
  config: string;
  log: string;
  owner: string;
}

function layoutOf(dir: string): Layout {
  return {
    dir,
    socket: join(dir, 'docker.sock'),
    dataRoot: join(dir, 'data'),
    execRoot: join(dir, 'x'),
    pidfile: join(dir, 'docker.pid'),
    config: join(dir, 'daemon.json'),
    log: join(dir, 'dockerd.log'),
    owner: join(dir, 'owner.json'),
  };
}

/** Why a private daemon cannot start here (fast checks: root, binaries), or undefined. */
export async function privateDaemonProblem(gvisor: boolean): Promise<{ message: string; hint: string } | undefined> {
  if (process.platform !== 'linux')
    return { message: `a private Docker daemon needs Linux (this is ${process.platform})`, hint: 'use an existing daemon (socketPath or DOCKER_HOST)' };
  if (process.getuid?.() !== 0) {
    return {
      message: "starting the run's own Docker daemon needs root",
      hint: 'run sandcheck as root (CI does), or use an existing daemon (--docker-socket / DOCKER_HOST)',
    };
  }
  if (!(await findBinary('dockerd', TOOL_DIRS)))
    return { message: 'dockerd is not installed', hint: 'apt-get install -y docker.io (and runsc for the gvisor profile)' };
  if (!(await findBinary('nsenter', TOOL_DIRS)) || !(await findBinary('unshare', TOOL_DIRS)))
    return { message: 'nsenter/unshare are not installed', hint: 'apt-get install -y util-linux' };
  if (gvisor && !(await findBinary('runsc', TOOL_DIRS))) return { message: 'runsc (gVisor) is not installed', hint: 'apt-get install -y runsc' };
  return undefined;
}

/** Starts the lab daemon and waits until it answers. Throws BACKEND_UNAVAILABLE with a hint when it cannot. */
export async function startLabDaemon(options: StartLabDaemonOptions): Promise<LabDaemon> {
  const started = performance.now();
  if (!SAFE_RUN.test(options.runId)) throw new SandcheckError('HARNESS', `run id "${options.runId}" is not safe in paths`);
  if (process.getuid?.() !== 0) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', 'starting a Docker daemon inside the lab needs root', { hint: 'run sandcheck as root (CI does)' });
  }
  const problem = await privateDaemonProblem(false);
  if (problem) throw new SandcheckError('BACKEND_UNAVAILABLE', problem.message, { hint: problem.hint });
  const dockerd = (await findBinary('dockerd', TOOL_DIRS)) ?? 'dockerd';
  const enter =
    options.netnsPath !== undefined
      ? [(await findBinary('nsenter', TOOL_DIRS)) ?? 'nsenter', `--net=${options.netnsPath}`]
      : [(await findBinary('unshare', TOOL_DIRS)) ?? 'unshare', '--net'];
  const labInode = options.netnsPath !== undefined ? await netnsInode(options.netnsPath) : undefined;
  if (options.netnsPath !== undefined && labInode === undefined) throw new SandcheckError('HARNESS', `the lab namespace ${options.netnsPath} does not exist`);
  const hostInode = await processNetnsInode(process.pid);
  const dir = resolve(options.dir);
  const L = layoutOf(dir);
  if (Buffer.byteLength(join(L.execRoot, 'containerd', 'containerd.sock')) > MAX_SOCKET_PATH) {
    throw new SandcheckError('CONFIG_INVALID', `the lab daemon directory ${dir} is too long for unix socket paths (keep it under ~60 characters)`);
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const existing = await readdir(dir);
  if (existing.length > 0)
    throw new SandcheckError('HARNESS', `the lab daemon directory ${dir} is not empty; refusing to reuse it (sweepStaleLabDaemons cleans dead runs)`);
  const me = await selfOwner();
  const ownerText = `${JSON.stringify({ version: 1, runId: options.runId, ownerPid: me.pid, ownerStartTime: me.startTime, bootId: me.bootId, netnsPath: options.netnsPath ?? null, createdAt: new Date().toISOString() })}\n`;
  const runsc = options.gvisor === false ? undefined : await findBinary('runsc', TOOL_DIRS);
  // Our own config file: /etc/docker/daemon.json (registry mirrors, other runtimes) is never read.
  const configText = `${JSON.stringify(
    {
      // Docker 20.10 otherwise writes its identity key to /etc/docker/key.json (a config-file-only setting).
      'deprecated-key-path': join(dir, 'key.json'),
      ...(runsc ? { runtimes: { runsc: { path: runsc, runtimeArgs: ['--network=none'] } } } : {}),
    },
    null,
    2,
  )}\n`;
  const prepare = async (): Promise<void> => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // The ownership record first: a sweep never mistakes a daemon being started for a stale one.
    await writeFile(L.owner, ownerText, { mode: 0o600 });
    await writeFile(L.config, configText, { mode: 0o600 });
  };
  await prepare();

  const drivers = options.storageDriver === 'vfs' ? ['vfs'] : options.storageDriver === 'overlay2' ? ['overlay2'] : ['overlay2', 'vfs'];
  let lastProblem = '';
  for (const driver of drivers) {
    const attempt = await launch(L, dockerd, enter, driver, options.startTimeoutMs ?? 30_000, options.env ?? {});
    if ('problem' in attempt) {
      lastProblem += `${lastProblem ? '; ' : ''}${driver}: ${attempt.problem}`;
      await cleanupDir(L, undefined);
      await prepare();
      continue;
    }
    const { child, client, unhook } = attempt;
    const pid = child.pid ?? 0;
    // Fail closed: the daemon must really be in the lab, or at least not in the host's namespace
    // (nsenter/unshare replaced themselves with dockerd: same pid).
    const inode = await processNetnsInode(pid);
    if (inode === undefined || (labInode !== undefined ? inode !== labInode : inode === hostInode)) {
      await stopDaemon(L, child, client, unhook);
      throw new SandcheckError('HARNESS', `the private daemon (pid ${pid}) is not in ${options.netnsPath ?? 'a namespace of its own'}; stopped it`);
    }
    let stopped: Promise<LabDaemonStopReport> | undefined;
    return {
      socketPath: L.socket,
      netnsPath: options.netnsPath,
      dir,
      pid,
      storageDriver: driver,
      runtimes: ['runc', ...(runsc ? ['runsc'] : [])],
      startMs: performance.now() - started,
      client,
      stop() {
        stopped ??= stopDaemon(L, child, client, unhook);
        return stopped;
      },
    };
  }
  await cleanupDir(L, undefined);
  throw new SandcheckError('BACKEND_UNAVAILABLE', `the lab Docker daemon did not start (${lastProblem})`, {
    hint: 'see dockerd --help; on this kind of host the lab daemon needs root, cgroups mounted and nsenter (not ip netns exec)',
  });
}

interface Launched {
  child: ChildProcess;
  client: DockerClient;
  unhook: () => void;
}

async function launch(
  L: Layout,
  dockerd: string,
  enter: readonly string[],
  driver: string,
  timeoutMs: number,
  extraEnv: Readonly<Record<string, string>>,
): Promise<Launched | { problem: string }> {
  const [enterBin, ...enterArgs] = enter;
  const args = [
    ...enterArgs,
    '--',
    dockerd,
    '--config-file',
    L.config,
    '--host',
    `unix://${L.socket}`,
    '--data-root',
    L.dataRoot,
    '--exec-root',
    L.execRoot,
    '--pidfile',
    L.pidfile,
    '--storage-driver',
    driver,
    '--exec-opt',
    'native.cgroupdriver=cgroupfs',
    // docker0 and its NAT rules, inside the lab namespace (where nothing routes out).
    '--iptables=true',
    '--ip6tables=false',
    '--shutdown-timeout',
    '2',
    '--log-level',
    'warn',
  ];
  const logFd = openSync(L.log, 'a', 0o600);
  let child: ChildProcess;
  try {
    // Its own session and process group, so stop() can take the whole group down. A clean environment:
    // the harness's (decoy) credentials never reach the daemon.
    child = spawn(enterBin ?? 'nsenter', args, {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...extraEnv, PATH: TOOL_PATH, HOME: L.dir },
      cwd: '/',
    });
  } finally {
    closeSync(logFd);
  }
  const pid = child.pid;
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = signal ?? `exit ${code}`;
  });
  child.once('error', (err) => {
    exited = err.message;
  });
  if (pid === undefined) return { problem: 'could not spawn nsenter/dockerd' };
  const unhook = onProcessExit(() => emergencyKill(pid, L.dir));
  const client = (await import('./dockerode-client.js')).createDockerodeClient({ socketPath: L.socket });
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if (exited !== undefined) {
      unhook();
      return { problem: `dockerd ended (${exited}): ${logReason(await tail(L.log))}` };
    }
    if ((await stat(L.socket).catch(() => undefined))?.isSocket()) {
      try {
        await client.ping(AbortSignal.timeout(1000));
        return { child, client, unhook };
      } catch {
        // not yet
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  killGroup(pid);
  unhook();
  await killOwnedProcesses(L.dir);
  return { problem: `no answer on ${L.socket} within ${timeoutMs} ms: ${logReason(await tail(L.log))}` };
}

/** Synchronous last resort when the harness exits without stop(): the group, then anything naming the dir. */
function emergencyKill(pid: number, dir: string): void {
  killGroup(pid);
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(`${dir}/`)) killQuietly(Number(e), 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** Processes of this daemon: their command line names its directory (dockerd, containerd, shims, runsc). */
async function processesNaming(dir: string): Promise<number[]> {
  const out: number[] = [];
  for (const e of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    const cmd = await cmdlineOf(Number(e));
    if (cmd?.some((a) => a.includes(`${dir}/`) || a === dir)) out.push(Number(e));
  }
  return out;
}

async function killOwnedProcesses(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (let round = 0; round < 3; round++) {
    const pids = await processesNaming(dir);
    if (pids.length === 0) break;
    for (const pid of pids) {
      if (round === 0) found.push(`${await commOf(pid)} (pid ${pid})`);
      killQuietly(pid, 'SIGKILL');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return found;
}

/** The ids of the containers a daemon made, from its data root (their processes can outlive the daemon and its shims). */
async function containersOnDisk(L: Layout): Promise<string[]> {
  return (await readdir(join(L.dataRoot, 'containers')).catch(() => [] as string[])).filter((n) => /^[0-9a-f]{64}$/.test(n));
}

/** Processes still in a cgroup of one of these containers (runc containers outlive a killed shim). */
async function processesOfContainers(ids: readonly string[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const out: number[] = [];
  for (const e of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(e)) continue;
    const cg = await readFile(`/proc/${e}/cgroup`, 'utf8').catch(() => '');
    if (ids.some((id) => cg.includes(id))) out.push(Number(e));
  }
  return out;
}

async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mounts', 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((mp) => mp.startsWith(`${dir}/`) || mp === dir)
    .sort((a, b) => b.length - a.length);
}

/** Unmounts everything under the directory, then removes it; never removes through a live mount. */
async function cleanupDir(L: Layout, leftovers: string[] | undefined): Promise<void> {
  for (let round = 0; round < 3; round++) {
    const mps = await mountsUnder(L.dir);
    if (mps.length === 0) break;
    for (const mp of mps) {
      const r = await execa('umount', [mp], { reject: false, env: { PATH: TOOL_PATH }, extendEnv: false });
      if (r.exitCode !== 0) await execa('umount', ['-l', mp], { reject: false, env: { PATH: TOOL_PATH }, extendEnv: false });
    }
  }
  const still = await mountsUnder(L.dir);
  if (still.length > 0) {
    leftovers?.push(`${still.length} mount(s) under the lab daemon directory could not be unmounted; the directory was kept`);
    return;
  }
  try {
    // The ownership record goes last: a run killed mid-removal leaves a directory its sweep still recognises.
    for (const name of await readdir(L.dir).catch(() => [] as string[])) {
      const path = join(L.dir, name);
      if (path !== L.owner) await rm(path, { recursive: true, force: true });
    }
    await rm(L.dir, { recursive: true, force: true });
  } catch (err) {
    leftovers?.push(`the lab daemon directory could not be removed: ${errorMessage(err)}`);
  }
}

async function waitExit(child: ChildProcess | undefined, pid: number, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    if (child ? child.exitCode !== null || child.signalCode !== null : (await readStat(pid)) === undefined) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

async function stopDaemon(
  L: Layout,
  child: ChildProcess | undefined,
  client: DockerClient,
  unhook: () => void,
  knownPid?: number,
): Promise<LabDaemonStopReport> {
  const t0 = performance.now();
  const leftovers: string[] = [];
  const pid = child?.pid ?? knownPid;
  // 1. Everything in this private daemon is ours: remove every container while the daemon can still do it properly.
  const ids: string[] = [];
  try {
    const all = await client.listContainers([]);
    for (const c of all) {
      ids.push(c.id);
      await client.removeContainer(c.id).catch((err: unknown) => leftovers.push(`container ${c.id.slice(0, 12)} could not be removed: ${errorMessage(err)}`));
    }
  } catch {
    // The daemon no longer answers (a crashed run): its own record of its containers names them for the kills below.
    ids.push(...(await containersOnDisk(L)));
  }
  // 2. SIGTERM, then SIGKILL the whole process group after a grace.
  if (pid !== undefined) {
    killQuietly(pid, 'SIGTERM');
    if (!(await waitExit(child, pid, 10_000))) {
      leftovers.push('dockerd did not stop within 10 s of SIGTERM; killed its process group');
      killGroup(pid);
      await waitExit(child, pid, 5000);
    }
    killGroup(pid);
  }
  // 3. Shims, containerd, runsc sandboxes and gofers name the daemon's directories on their command line.
  for (const p of await killOwnedProcesses(L.dir)) leftovers.push(`${p} of the lab daemon survived it; killed`);
  for (const p of await processesOfContainers(ids)) {
    leftovers.push(`${await commOf(p)} (pid ${p}) of a lab daemon container survived it; killed`);
    killQuietly(p, 'SIGKILL');
  }
  unhook();
  // 4. Mounts (overlay layers, tmpfs volumes, netns files) and the directory.
  await cleanupDir(L, leftovers);
  return { leftovers, stopMs: performance.now() - t0 };
}

export interface LabDaemonSweepReport {
  removed: string[];
  kept: { dir: string; reason: string }[];
}

/**
 * Crash recovery: for each `<root>/<runId>/` with an ownership record whose owner process is gone, stops
 * the daemon it left (if it still runs: the pidfile's process must name that directory), kills its shims
 * and runsc processes, unmounts and removes the directory. Directories without a valid record are kept.
 */
export async function sweepStaleLabDaemons(root: string = DEFAULT_LAB_DAEMON_ROOT, dryRun = false): Promise<LabDaemonSweepReport> {
  const report: LabDaemonSweepReport = { removed: [], kept: [] };
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const dir = join(root, name);
    const L = layoutOf(dir);
    let owner;
    try {
      owner = OwnerSchema.parse(JSON.parse(await readFile(L.owner, 'utf8')));
    } catch {
      report.kept.push({ dir, reason: 'no valid owner.json: not a lab daemon directory of sandcheck' });
      continue;
    }
    if (await ownerAlive({ pid: owner.ownerPid, startTime: owner.ownerStartTime, bootId: owner.bootId })) {
      report.kept.push({ dir, reason: 'its run is alive' });
      continue;
    }
    if (dryRun) {
      report.removed.push(dir);
      continue;
    }
    const pidText = (await readFile(L.pidfile, 'utf8').catch(() => '')).trim();
    const pid = /^\d+$/.test(pidText) ? Number(pidText) : undefined;
    const cmd = pid !== undefined ? await cmdlineOf(pid) : undefined;
    const alive = pid !== undefined && cmd !== undefined && cmd.some((a) => a.includes(L.socket));
    // Loaded only for a daemon to stop: every run's start-up sweep reads this directory, most find nothing dead.
    const client = (await import('./dockerode-client.js')).createDockerodeClient({ socketPath: L.socket });
    const r = await stopDaemon(L, undefined, client, () => undefined, alive ? pid : undefined);
    if ((await stat(dir).catch(() => undefined)) === undefined) report.removed.push(dir);
    else report.kept.push({ dir, reason: r.leftovers.join('; ') || 'could not be removed' });
  }
  return report;
}
