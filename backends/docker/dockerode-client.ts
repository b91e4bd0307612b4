import type { Duplex, Readable } from 'node:stream';
import Docker from 'dockerode';
import {
  DockerApiError,
  type ContainerDetails,
  type ContainerSpec,
  type DaemonInfo,
  type DockerClient,
  type ExecSpec,
  type ExecState,
  type ImageDetails,
  type PathStat,
  type VolumeSpec,
} from './client.js';

/** The only file that imports dockerode. */

/** Control-plane calls (create, start, kill, inspect…) that take longer than this count as a hung daemon. */
const CALL_TIMEOUT_MS = 60_000;

export interface DockerEndpoint {
  /** A unix socket of a daemon on this machine. Without it, DOCKER_HOST (docker-modem's rules) decides. */
  socketPath?: string;
}

function statusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'statusCode' in err) {
    const s = (err as { statusCode: unknown }).statusCode;
    return typeof s === 'number' ? s : undefined;
  }
  return undefined;
}

function apiError(what: string, err: unknown): DockerApiError {
  if (err instanceof DockerApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new DockerApiError(`${what}: ${message.trim()}`, statusOf(err), { cause: err });
}

async function call<T>(what: string, fn: (signal: AbortSignal) => Promise<T>, timeoutMs = CALL_TIMEOUT_MS): Promise<T> {
  try {
    return await fn(AbortSignal.timeout(timeoutMs));
  } catch (err) {
    throw apiError(what, err);
  }
}

/** Like `call`, but 404 (and the given extra statuses) become `fallback`. */
async function callOr<T, F>(what: string, fallback: F, fn: (signal: AbortSignal) => Promise<T>, also: number[] = []): Promise<T | F> {
  try {
    return await call(what, fn);
  } catch (err) {
    const s = err instanceof DockerApiError ? err.statusCode : undefined;
    if (s === 404 || (s !== undefined && also.includes(s))) return fallback;
    throw err;
  }
}

function labelsOf(v: unknown): Record<string, string> {
  if (typeof v !== 'object' || v === null) return {};
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  return out;
}

function decodePathStat(header: string | string[] | undefined): PathStat | undefined {
  const raw = Array.isArray(header) ? header[0] : header;
  if (!raw) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const p = parsed as Record<string, unknown>;
    return {
      name: typeof p.name === 'string' ? p.name : '',
      size: typeof p.size === 'number' ? p.size : 0,
      mode: typeof p.mode === 'number' ? p.mode : 0,
      linkTarget: typeof p.linkTarget === 'string' ? p.linkTarget : '',
    };
  } catch {
    return undefined;
  }
}

interface WithHeaders {
  headers?: Record<string, string | string[] | undefined>;
}

function headerOf(res: unknown): string | string[] | undefined {
  return (res as WithHeaders).headers?.['x-docker-container-path-stat'];
}

function filters(labels: readonly string[]): { filters: string } {
  return { filters: JSON.stringify({ label: labels }) };
}

export function createDockerodeClient(endpoint: DockerEndpoint = {}): DockerClient {
  const docker = endpoint.socketPath ? new Docker({ socketPath: endpoint.socketPath }) : new Docker();
  const host = process.env.DOCKER_HOST;
  const described = endpoint.socketPath ? `unix://${endpoint.socketPath}` : host && host.length > 0 ? host : 'the default Docker socket (DOCKER_HOST unset)';
  const local = endpoint.socketPath !== undefined || !host || host.startsWith('unix://');

  return {
    endpoint: described,
    local,
    async ping(signal) {
      try {
        // The typings omit the options argument that dockerode accepts at run time.
        const ping = docker.ping.bind(docker) as unknown as (o: { abortSignal: AbortSignal }) => Promise<unknown>;
        await ping({ abortSignal: signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS) });
      } catch (err) {
        throw apiError('ping', err);
      }
    },
    async info() {
      const info = docker.info.bind(docker) as unknown as (o: { abortSignal: AbortSignal }) => Promise<Record<string, unknown>>;
      const i = await call('info', (abortSignal) => info({ abortSignal }));
      return {
        ServerVersion: String(i.ServerVersion ?? ''),
        Driver: String(i.Driver ?? ''),
        CgroupDriver: String(i.CgroupDriver ?? ''),
        CgroupVersion: String(i.CgroupVersion ?? ''),
        Runtimes: typeof i.Runtimes === 'object' && i.Runtimes !== null ? (i.Runtimes as Record<string, unknown>) : {},
        DefaultRuntime: String(i.DefaultRuntime ?? ''),
        DockerRootDir: String(i.DockerRootDir ?? ''),
        Podman: 'BuildahVersion' in i,
      } satisfies DaemonInfo;
    },
    async version() {
      const version = docker.version.bind(docker) as unknown as (o: { abortSignal: AbortSignal }) => Promise<Record<string, unknown>>;
      const v = await call('version', (abortSignal) => version({ abortSignal }));
      return { Version: String(v.Version ?? ''), ApiVersion: String(v.ApiVersion ?? '') };
    },

    async createVolume(spec: VolumeSpec) {
      await call('create volume', (abortSignal) => docker.createVolume({ ...spec, abortSignal }));
    },
    async removeVolume(name) {
      return callOr('remove volume', false, async (abortSignal) => {
        await docker.getVolume(name).remove({ abortSignal });
        return true;
      });
    },
    async volumeExists(name) {
      return callOr('inspect volume', false, async (abortSignal) => {
        await docker.getVolume(name).inspect({ abortSignal });
        return true;
      });
    },
    async listVolumes(labelFilters) {
      const r = await call('list volumes', (abortSignal) => docker.listVolumes({ ...filters(labelFilters), abortSignal }));
      return (r.Volumes ?? []).map((v) => ({ id: v.Name, name: v.Name, labels: labelsOf(v.Labels) }));
    },

    async createContainer(spec: ContainerSpec) {
      const c = await call('create container', (abortSignal) =>
        docker.createContainer({
          ...spec,
          Tty: false,
          OpenStdin: false,
          AttachStdin: false,
          AttachStdout: false,
          AttachStderr: false,
          abortSignal,
        } as Docker.ContainerCreateOptions),
      );
      return c.id;
    },
    async startContainer(id) {
      await call('start container', (abortSignal) => docker.getContainer(id).start({ abortSignal }));
    },
    async inspectContainer(id) {
      return callOr('inspect container', undefined, async (abortSignal) => {
        const i = await docker.getContainer(id).inspect({ abortSignal });
        return {
          Id: i.Id,
          State: {
            Status: i.State.Status,
            Running: i.State.Running,
            Pid: i.State.Pid,
            ExitCode: i.State.ExitCode,
            OOMKilled: i.State.OOMKilled,
            Error: i.State.Error,
          },
          HostConfig: {
            ...(i.HostConfig.NetworkMode !== undefined ? { NetworkMode: i.HostConfig.NetworkMode } : {}),
            ...(typeof i.HostConfig.Runtime === 'string' ? { Runtime: i.HostConfig.Runtime } : {}),
            ...(typeof i.HostConfig.CgroupParent === 'string' ? { CgroupParent: i.HostConfig.CgroupParent } : {}),
          },
        } satisfies ContainerDetails;
      });
    },
    async killContainer(id) {
      await callOr('kill container', undefined, (abortSignal) => docker.getContainer(id).kill({ signal: 'SIGKILL', abortSignal }), [409]);
    },
    async removeContainer(id) {
      return callOr('remove container', false, async (abortSignal) => {
        await docker.getContainer(id).remove({ force: true, v: true, abortSignal });
        return true;
      });
    },
    async listContainers(labelFilters) {
      const r = await call('list containers', (abortSignal) => docker.listContainers({ all: true, ...filters(labelFilters), abortSignal }));
      return r.map((c) => ({ id: c.Id, name: (c.Names[0] ?? '').replace(/^\//, ''), labels: labelsOf(c.Labels), state: c.State }));
    },

    async listNetworks(labelFilters) {
      const r = await call('list networks', (abortSignal) => docker.listNetworks({ ...filters(labelFilters), abortSignal }));
      return r.map((n) => ({ id: n.Id, name: n.Name, labels: labelsOf(n.Labels) }));
    },
    async removeNetwork(id) {
      return callOr('remove network', false, async (abortSignal) => {
        await docker.getNetwork(id).remove({ abortSignal });
        return true;
      });
    },

    async putArchive(id, path, tar) {
      await call('put archive', async (abortSignal) => {
        await docker.getContainer(id).putArchive(tar, { path, noOverwriteDirNonDir: 'true', abortSignal });
      });
    },
    async getArchive(id, path, signal) {
      return callOr('get archive', undefined, async (abortSignal) => {
        const res = await docker.getContainer(id).getArchive({ path, abortSignal: signal ?? abortSignal });
        return { stat: decodePathStat(headerOf(res)), stream: res as Readable };
      });
    },
    async statPath(id, path) {
      return callOr('stat path', undefined, async (abortSignal) => {
        // infoArchive's own call, with 404 accepted: Podman answers 404 for a dangling symlink, with the link's stat in the header.
        const res: unknown = await new Promise((resolve, reject) => {
          docker.modem.dial(
            {
              path: `/containers/${id}/archive?`,
              method: 'HEAD',
              abortSignal,
              isStream: true,
              statusCodes: { 200: true, 404: true, 400: 'client error, bad parameters', 500: 'server error' },
              options: { path },
            },
            (err: unknown, data: unknown) => (err ? reject(err) : resolve(data)),
          );
        });
        (res as Readable).resume?.();
        const st = decodePathStat(headerOf(res));
        if ((res as { statusCode?: number }).statusCode === 404) return st && Math.floor(st.mode / 2 ** 27) % 2 === 1 ? st : undefined;
        return st;
      });
    },

    async createExec(id, spec: ExecSpec) {
      const e = await call('create exec', (abortSignal) => docker.getContainer(id).exec({ ...spec, abortSignal }));
      return e.id;
    },
    async startExec(execId, stdin) {
      return call('start exec', async () => (await docker.getExec(execId).start({ hijack: true, stdin, Detach: false, Tty: false })) as Duplex);
    },
    async inspectExec(execId) {
      const i = await call('inspect exec', (abortSignal) => docker.getExec(execId).inspect({ abortSignal }));
      return { Running: i.Running, ExitCode: i.ExitCode, Pid: i.Pid } satisfies ExecState;
    },

    async inspectImage(ref) {
      return callOr('inspect image', undefined, async (abortSignal) => {
        const image = docker.getImage(ref);
        const inspect = image.inspect.bind(image) as unknown as (o: { abortSignal: AbortSignal }) => Promise<Docker.ImageInspectInfo>;
        const i = await inspect({ abortSignal });
        return { Id: i.Id, Labels: labelsOf(i.Config?.Labels) } satisfies ImageDetails;
      });
    },
    async importImage(rootfsTar, repo, tag, changes) {
      await call(
        'import image',
        async () => {
          // The tag inside repo ("name:tag", which the Engine API allows): Podman 4.x's compat import ignores `tag`.
          const out = await docker.importImage(rootfsTar, { repo: `${repo}:${tag}`, changes: [...changes] });
          // The progress stream reports errors in-band: {"error": "..."}.
          await new Promise<void>((resolve, reject) => {
            let tail = '';
            out.on('data', (c: Buffer) => {
              tail = (tail + c.toString('utf8')).slice(-4096);
            });
            out.on('error', reject);
            out.on('end', () => {
              const m = /"error"\s*:\s*"([^"]*)"/.exec(tail);
              if (m) reject(new Error(m[1]));
              else resolve();
            });
          });
        },
        5 * 60_000,
      );
    },
    async listImages(labelFilters) {
      const r = await call('list images', (abortSignal) => docker.listImages({ ...filters(labelFilters), abortSignal }));
      return r.map((i) => ({ id: i.Id, name: (i.RepoTags ?? [])[0] ?? i.Id, labels: labelsOf(i.Labels) }));
    },
    async removeImage(ref) {
      return callOr('remove image', false, async (abortSignal) => {
        await docker.getImage(ref).remove({ force: true, abortSignal });
        return true;
      });
    },
  };
}
