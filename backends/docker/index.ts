import { readFile } from 'node:fs/promises';
import { formatIssues } from '../../core/config-issues.js';
import { ContainerConfigSchema } from './container-config.js';
import { withAppliedOptions } from '../shared/applied-options.js';
import { SandcheckError } from '../../core/errors.js';
import { DockerBackend } from './docker-backend.js';
import { createDockerodeClient } from './dockerode-client.js';
import { checkUserImage, ensureProbeImage } from './image.js';
import { DockerOptionsSchema, type DockerOptions, type ProfileName } from './options.js';

export { DockerEnvironment } from './docker-environment.js';
export { DockerBackend, type DockerRunHandle, ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN, UNAVAILABLE_HINT } from './docker-backend.js';
export { DockerOptionsSchema, DEFAULT_BOX_UID, PROFILE_NAMES, type DockerOptions, type ProfileName, type ResolvedDockerOptions } from './options.js';
export { PROFILES, capabilitiesFor, derivedReasons, hostConfigFor, isGvisor, userOf, workspaceVolumeOptions, type Profile } from './profiles.js';
export { ContainerConfigSchema, HostConfigSchema, type ContainerConfig, type ContainerConfigInput } from './container-config.js';
export {
  startLabDaemon,
  sweepStaleLabDaemons,
  privateDaemonProblem,
  DEFAULT_LAB_DAEMON_ROOT,
  type LabDaemon,
  type StartLabDaemonOptions,
  type LabDaemonStopReport,
} from './lab-daemon.js';
export { ensureProbeImage, buildProbeRootfs, checkUserImage, IMAGE_REPO, type ProbeRootfs } from './image.js';
export { sweepDockerLeftovers, type DockerSweepReport } from './sweep.js';
export {
  createDiskWorkspace,
  removeDiskWorkspace,
  sweepDiskWorkspaces,
  diskImageSupport,
  DEFAULT_DISK_STATE_DIR,
  type DiskSweepReport,
} from './disk-workspace.js';
export { createDockerodeClient, type DockerEndpoint } from './dockerode-client.js';
export type { DockerClient } from './client.js';

/**
 * A docker backend for one profile. By default (private mode) `openRun()` starts the run's own daemon inside
 * the run's lab. `socketPath` (+ `labNetnsPath` when that daemon is a lab daemon) or `daemon: 'docker-host'`
 * use an existing daemon; outside the lab network probes are declared not enforceable. `image` runs a user's
 * own image instead of the offline-built probe image.
 */
export default async function createDockerBackend(options: DockerOptions): Promise<DockerBackend> {
  const parsed = DockerOptionsSchema.safeParse(options);
  if (!parsed.success) throw new SandcheckError('CONFIG_INVALID', `invalid docker backend options\n${formatIssues(parsed.error, options, '--backend-config')}`);
  const opts = parsed.data;
  const daemon = opts.daemon ?? (opts.socketPath !== undefined ? 'socket' : 'private');
  const client =
    daemon === 'private' ? undefined : createDockerodeClient(daemon === 'socket' && opts.socketPath !== undefined ? { socketPath: opts.socketPath } : {});
  const userImage = opts.image ?? opts.container?.Image ?? opts.container?.Config.Image;
  const securityOpt = opts.container ? await resolveSecurityOpt(opts.container.HostConfig.SecurityOpt ?? []) : undefined;
  const backend = new DockerBackend({
    opts,
    ...(securityOpt ? { securityOpt } : {}),
    ...(client ? { client } : {}),
    image:
      userImage !== undefined
        ? (c) => checkUserImage(c, userImage)
        : (c) => ensureProbeImage(c, { boxUid: opts.boxUid, ...(opts.runId ? { runId: opts.runId } : {}) }),
  });
  return withAppliedOptions(backend, opts);
}

/**
 * SecurityOpt as `docker run` takes it, for the Engine API: `seccomp=<path>` becomes the profile's JSON
 * (read now: a missing or malformed file is a config error before anything runs). AppArmor profiles must
 * already be loaded (`apparmor_parser -r FILE`); they are named, not given by path.
 */
export async function resolveSecurityOpt(opts: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const o of opts) {
    const m = /^(seccomp|apparmor)[=:](.*)$/s.exec(o);
    if (!m) {
      out.push(o);
      continue;
    }
    const [, kind, value = ''] = m;
    if (kind === 'apparmor') {
      if (value.includes('/'))
        throw new SandcheckError(
          'CONFIG_INVALID',
          `HostConfig.SecurityOpt: apparmor=${value}: load the profile first (apparmor_parser -r ${value}) and give its name`,
        );
      out.push(`apparmor=${value}`);
      continue;
    }
    if (value === 'unconfined' || value.trimStart().startsWith('{')) {
      out.push(`seccomp=${value}`);
      continue;
    }
    let text: string;
    try {
      text = await readFile(value, 'utf8');
      JSON.parse(text);
    } catch (err) {
      throw new SandcheckError(
        'CONFIG_INVALID',
        `HostConfig.SecurityOpt: seccomp=${value}: not a readable JSON seccomp profile (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    out.push(`seccomp=${text}`);
  }
  return out;
}

/**
 * `--backend docker --backend-config my-container.yaml`: the file's Docker keys (Config, HostConfig, Image,
 * claims, name) plus the CLI's daemon and image flags.
 */
export async function createContainerConfigBackend(options: unknown): Promise<DockerBackend> {
  const o = typeof options === 'object' && options !== null && !Array.isArray(options) ? (options as Record<string, unknown>) : {};
  const { image, socketPath, daemon, daemonRoot, labNetnsPath, boxUid, runId, gvisorRuntime, assumePolicy, workspace, diskStateDir, ...container } = o;
  const pass = { image, socketPath, daemon, daemonRoot, labNetnsPath, boxUid, runId, gvisorRuntime, assumePolicy, workspace, diskStateDir };
  const defined = Object.fromEntries(Object.entries(pass).filter(([, v]) => v !== undefined));
  if (Object.keys(container).length === 0) {
    throw new SandcheckError(
      'CONFIG_INVALID',
      '--backend docker needs --backend-config FILE: your container settings (Config/HostConfig keys as docker inspect prints them)',
      {
        hint: 'or use a preset: --backend docker-hardened / docker-default / gvisor',
      },
    );
  }
  const parsed = ContainerConfigSchema.safeParse(container);
  if (!parsed.success)
    throw new SandcheckError('CONFIG_INVALID', `invalid docker container configuration\n${formatIssues(parsed.error, container, '--backend-config')}`);
  return createDockerBackend({ ...defined, container: container as DockerOptions['container'] } as DockerOptions);
}

/** For the registry: one factory per profile. */
export function dockerProfileFactory(profile: ProfileName, extra: Omit<DockerOptions, 'profile'> = {}): () => Promise<DockerBackend> {
  return () => createDockerBackend({ profile, ...extra });
}

export { createDockerBackend };
