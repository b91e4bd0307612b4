import { performance } from 'node:perf_hooks';
import { chown, mkdir, open, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backend } from '../model/backend-contract.js';
import { BwrapBackend, commandArgv, type BoxPlan } from '../backends/bwrap/index.js';
import { boxSeccompFilter } from '../backends/bwrap/seccomp.js';
import type { HostConfigSpec } from '../backends/docker/client.js';
import { DockerBackend, hostConfigFor, LABEL_RUN } from '../backends/docker/index.js';
import type { Policy } from '../model/policy.js';
import { RUN_MARKER } from '../harness/run-context.js';
import type { PreparedPayload } from './payloads.js';
import { spawnTimed, type SpawnResult } from './spawn-timed.js';

const MIB = 1024 * 1024;
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The bare tool driving one payload, the way a user would without sandcheck. */
export interface RawTool {
  /** The command line, for the report. */
  describe: string;
  run(p: PreparedPayload, round: number): Promise<SpawnResult>;
}

export interface RawContext {
  runId: string;
  /** A directory of the bench run; each round works in its own subdirectory. */
  scratchDir: string;
  policy: Policy;
  /** The private daemon's socket (docker backends). */
  dockerSocket?: string;
  /** bwrap: also install the backend's seccomp filter (bwrap --seccomp on an fd), as its boxes run. */
  seccomp?: boolean;
}

/** Writes the payload's files into a fresh directory (read-only inputs root-owned 0444, as the backends put them). */
async function workDir(dir: string, p: PreparedPayload, owner: number | undefined): Promise<void> {
  // Not recursive: once the run's directory is removed (an interrupt), a late round fails instead of recreating it.
  await mkdir(dir, { mode: 0o755 });
  for (const f of p.files) await writeFile(join(dir, f.path), f.content, { mode: f.readOnly ? 0o444 : 0o644 });
  if (owner !== undefined) await chown(dir, owner, owner);
}

export function rawToolFor(backend: Backend, ctx: RawContext): RawTool {
  if (backend instanceof BwrapBackend) return rawBwrap(backend, ctx);
  if (backend instanceof DockerBackend) return rawDocker(backend, ctx);
  if (backend.name === 'process') return rawProcess(ctx);
  throw new Error(`no raw tool known for backend ${backend.name}`);
}

function rawProcess(ctx: RawContext): RawTool {
  return {
    describe: 'python3 … (plain child process, cwd = a fresh directory)',
    async run(p, round) {
      const dir = join(ctx.scratchDir, `raw-${round}`);
      const t = performance.now();
      await workDir(dir, p, undefined);
      const r = await spawnTimed(p.argv, { env: { PATH: BASE_PATH, HOME: dir, LANG: 'C.UTF-8', ...p.env }, cwd: dir });
      await rm(dir, { recursive: true, force: true });
      return { ...r, ms: performance.now() - t };
    },
  };
}

/** setpriv … bwrap … with exactly the flags the backend builds (backends/bwrap/argv.ts), minus its launcher and cgroups. */
function rawBwrap(backend: BwrapBackend, ctx: RawContext): RawTool {
  const rt = backend.runtime;
  const plan = (work: string, tmp: string, p: PreparedPayload): BoxPlan => ({
    tools: rt.tools,
    uid: rt.dropToUid,
    unsharePid: rt.opts.unsharePid,
    unshareUser: rt.opts.unshareUser,
    shareNetwork: false,
    netnsPath: undefined,
    resolvConf: undefined,
    workHost: work,
    tmpHost: rt.workspace === 'host-dir' ? undefined : tmp,
    tmpSizeBytes: ctx.policy.resources.diskMb * MIB,
    readOnlyFiles: p.files.filter((f) => f.readOnly).map((f) => f.path),
    extraBinds: [],
    cwd: '',
    env: [[RUN_MARKER, ctx.runId], ['SANDCHECK_ENV', 'raw'], ...Object.entries(p.env)],
    argv: p.argv,
    statusFd: 3,
    seccomp: filter !== undefined,
  });
  const seccomp = ctx.seccomp === true ? boxSeccompFilter() : undefined;
  if (seccomp && 'reason' in seccomp) throw new Error(`raw bwrap with seccomp: ${seccomp.reason}`);
  const filter = seccomp?.filter;
  const sample = commandArgv(plan('WORK', 'TMP', { argv: ['python3', '-c', 'pass'], files: [], env: {} }));
  return {
    describe: sample.map((a) => a.replace(/^\/usr\/s?bin\//, '')).join(' '),
    async run(p, round) {
      const dir = join(ctx.scratchDir, `raw-${round}`);
      const work = join(dir, 'work');
      const tmp = join(dir, 'tmp');
      const t = performance.now();
      await mkdir(dir, { mode: 0o755 });
      await workDir(work, p, rt.dropToUid);
      await mkdir(tmp, { mode: 0o700 });
      if (rt.dropToUid !== undefined) await chown(tmp, rt.dropToUid, rt.dropToUid);
      // The filter as the backend hands it over: a file of the run, opened for bwrap on its --seccomp fd.
      let fd: FileHandle | undefined;
      if (filter) {
        await writeFile(join(dir, 'seccomp.bpf'), filter, { mode: 0o600 });
        fd = await open(join(dir, 'seccomp.bpf'), 'r');
      }
      const r = await spawnTimed(commandArgv(plan(work, tmp, p)), { env: {}, extraPipes: 1, ...(fd ? { extraFds: [fd.fd] } : {}) }).finally(() => fd?.close());
      await rm(dir, { recursive: true, force: true });
      return { ...r, ms: performance.now() - t };
    },
  };
}

/** The backend's HostConfig as `docker run` flags (the presets use only these fields). */
export function dockerRunFlags(hc: HostConfigSpec): string[] {
  const unsupported = (['Privileged', 'Binds', 'Ulimits', 'Devices', 'Sysctls', 'IpcMode', 'PidMode', 'UsernsMode', 'CapAdd'] as const).filter(
    (k) => hc[k] !== undefined,
  );
  if (unsupported.length > 0) throw new Error(`raw docker run: HostConfig fields not translated: ${unsupported.join(', ')}`);
  const f: string[] = [`--network=${hc.NetworkMode}`];
  if (hc.Memory !== undefined) f.push(`--memory=${hc.Memory}b`);
  if (hc.MemorySwap !== undefined) f.push(`--memory-swap=${hc.MemorySwap}b`);
  if (hc.NanoCpus !== undefined) f.push(`--cpus=${hc.NanoCpus / 1e9}`);
  if (hc.PidsLimit !== undefined) f.push(`--pids-limit=${hc.PidsLimit}`);
  if (hc.ReadonlyRootfs) f.push('--read-only');
  for (const [path, opts] of Object.entries(hc.Tmpfs)) f.push('--tmpfs', `${path}:${opts}`);
  for (const c of hc.CapDrop ?? []) f.push(`--cap-drop=${c}`);
  for (const s of hc.SecurityOpt ?? []) f.push(`--security-opt=${s}`);
  if (hc.Init) f.push('--init');
  if (hc.Runtime !== undefined) f.push(`--runtime=${hc.Runtime}`);
  f.push(`--log-driver=${hc.LogConfig.Type}`);
  return f;
}

/** `docker run --rm` against the backend's own private daemon, with the flags its profile gives a container. */
function rawDocker(backend: DockerBackend, ctx: RawContext): RawTool {
  const socket = ctx.dockerSocket;
  if (socket === undefined) throw new Error('raw docker run needs the private daemon socket');
  const hc = hostConfigFor(backend.profile, {
    policy: ctx.policy,
    volumeName: 'unused',
    gvisorRuntime: backend.parts.opts.gvisorRuntime,
    boxUid: backend.parts.opts.boxUid,
  });
  const flags = dockerRunFlags(hc);
  const user = backend.boxUser.user;
  const env = { PATH: BASE_PATH, HOME: ctx.scratchDir, DOCKER_CONFIG: join(ctx.scratchDir, 'docker-config') };
  return {
    describe: `docker -H unix://<private daemon> run --rm ${flags.join(' ')}${user ? ` --user=${user}` : ''} --mount type=bind,dst=/work,readonly -w /work IMAGE python3 …`,
    async run(p, round) {
      const image = await backend.image();
      const dir = join(ctx.scratchDir, `raw-${round}`);
      const t = performance.now();
      await workDir(dir, p, undefined);
      const envFlags = Object.entries({ PATH: BASE_PATH, HOME: '/work', LANG: 'C.UTF-8', [RUN_MARKER]: ctx.runId, SANDCHECK_ENV: 'raw', ...p.env }).flatMap(
        ([k, v]) => ['-e', `${k}=${v}`],
      );
      const argv = [
        'docker',
        '-H',
        `unix://${socket}`,
        'run',
        '--rm',
        '--name',
        `sandcheck-${ctx.runId}-raw${round}`,
        '--label',
        `${LABEL_RUN}=${ctx.runId}`,
        ...flags,
        ...(user ? [`--user=${user}`] : []),
        '--hostname=sandcheck',
        '--mount',
        `type=bind,src=${dir},dst=/work,readonly`,
        '-w',
        '/work',
        ...envFlags,
        image,
        ...p.argv,
      ];
      const r = await spawnTimed(argv, { env });
      await rm(dir, { recursive: true, force: true });
      return { ...r, ms: performance.now() - t };
    },
  };
}
