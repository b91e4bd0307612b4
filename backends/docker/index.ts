import { z } from 'zod';
import { SandcheckError } from '../../harness/errors.js';
import { DockerBackend } from './docker-backend.js';
import { createDockerodeClient } from './dockerode-client.js';
import { checkUserImage, ensureProbeImage } from './image.js';
import { DockerOptionsSchema, type DockerOptions, type ProfileName } from './options.js';

export { DockerBackend, DockerEnvironment, type DockerRunHandle, ENV_MARKER, LABEL_ENV, LABEL_OWNER, LABEL_PROFILE, LABEL_RUN, UNAVAILABLE_HINT } from './docker-backend.js';
export { DockerOptionsSchema, DEFAULT_BOX_UID, PROFILE_NAMES, type DockerOptions, type ProfileName, type ResolvedDockerOptions } from './options.js';
export { PROFILES, capabilitiesFor, hostConfigFor, workspaceVolumeOptions, type Profile } from './profiles.js';
export { startLabDaemon, sweepStaleLabDaemons, privateDaemonProblem, DEFAULT_LAB_DAEMON_ROOT, type LabDaemon, type StartLabDaemonOptions, type LabDaemonStopReport } from './lab-daemon.js';
export { ensureProbeImage, buildProbeRootfs, checkUserImage, IMAGE_REPO, type ProbeRootfs } from './image.js';
export { sweepDockerLeftovers, type DockerSweepReport } from './sweep.js';
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
  if (!parsed.success) throw new SandcheckError('CONFIG_INVALID', `invalid docker backend options:\n${z.prettifyError(parsed.error)}`);
  const opts = parsed.data;
  const daemon = opts.daemon ?? (opts.socketPath !== undefined ? 'socket' : 'private');
  const client =
    daemon === 'private' ? undefined : createDockerodeClient(daemon === 'socket' && opts.socketPath !== undefined ? { socketPath: opts.socketPath } : {});
  const userImage = opts.image;
  return new DockerBackend({
    opts,
    ...(client ? { client } : {}),
    image: userImage !== undefined ? (c) => checkUserImage(c, userImage) : (c) => ensureProbeImage(c, { boxUid: opts.boxUid, ...(opts.runId ? { runId: opts.runId } : {}) }),
  });
}

/** For the registry: one factory per profile. */
export function dockerProfileFactory(profile: ProfileName, extra: Omit<DockerOptions, 'profile'> = {}): () => Promise<DockerBackend> {
  return () => createDockerBackend({ profile, ...extra });
}

export { createDockerBackend };
