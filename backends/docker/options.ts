import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { ContainerConfigSchema } from './container-config.js';

/**
 * Host uid the hardened profiles run as (as the bwrap backend): not 65534, which runsc's own sandbox
 * processes and many daemons use; 65520–65533 is left unassigned by Debian and systemd.
 */
export const DEFAULT_BOX_UID = 65529;

export const PROFILE_NAMES = ['docker-default', 'docker-hardened', 'gvisor'] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];

const absolutePath = (what: string) =>
  z
    .string()
    .min(1)
    .refine((p) => isAbsolute(p), { error: `${what} must be an absolute path` });

export const DockerOptionsSchema = z
  .strictObject({
    /** A built-in preset; or `container`, the user's own configuration (exactly one of the two). */
    profile: z.enum(PROFILE_NAMES).optional(),
    container: ContainerConfigSchema.optional(),
    /**
     * Which daemon. 'private' (default): the backend starts the run's own dockerd inside the run's lab in
     * `openRun()` (root only). 'socket': the daemon at `socketPath`. 'docker-host': DOCKER_HOST
     * (docker-modem's rules: unix, tcp, ssh), then the default socket.
     */
    daemon: z.enum(['private', 'socket', 'docker-host']).optional(),
    /** Unix socket of an existing daemon (implies daemon: 'socket'). */
    socketPath: absolutePath('socketPath').optional(),
    /** Where private daemons keep their run directories (default /var/lib/sandcheck/lab-docker). */
    daemonRoot: absolutePath('daemonRoot').optional(),
    /**
     * The network namespace the daemon runs in, when it is a lab daemon (`startLabDaemon`). Only then are
     * network probes allowed: `create()` refuses a run whose lab is another namespace.
     */
    labNetnsPath: absolutePath('labNetnsPath').optional(),
    /** An image the user already has (it needs python3 on PATH); default: the offline-built probe image. */
    image: z.string().min(1).optional(),
    /**
     * Claim every policy item, as a team that trusts this configuration would (network.egress only when
     * the daemon is inside the run's lab). Used to show what the probes find in `docker-default`; the
     * honest declaration (false) turns the items it does not enforce into not-applicable.
     */
    assumePolicy: z.boolean().default(false),
    /** Host uid/gid the hardened profiles run as. */
    boxUid: z.number().int().min(1).max(4294967294).default(DEFAULT_BOX_UID),
    /** The run this backend serves, when known up front: the probe image it imports is labelled with it. */
    runId: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]{0,40}$/)
      .optional(),
    /** OCI runtime name for the gvisor profile, as registered with the daemon. */
    gvisorRuntime: z.string().min(1).default('runsc'),
    /**
     * What /work is. 'disk-image': an ext4 image of policy diskMb in the run's scratch directory, loop-mounted on
     * this machine and bound in (root, mkfs.ext4 and loop devices; a daemon that sees this machine's mounts). Its
     * page cache is reclaimable, so the disk limit is testable apart from the memory limit. 'tmpfs': a sized tmpfs
     * volume of the daemon (its pages count against the container's memory limit). Default: 'disk-image' for the
     * private daemon and a lab daemon (labNetnsPath) when this machine can make one, else 'tmpfs' with the reason.
     */
    workspace: z.enum(['disk-image', 'tmpfs']).optional(),
    /** Where disk-image workspaces are mounted (default /run/sandcheck/docker-disk). */
    diskStateDir: absolutePath('diskStateDir').optional(),
  })
  .refine((o) => (o.profile === undefined) !== (o.container === undefined), {
    error: 'give either profile (a preset) or container (your own configuration)',
    path: ['profile'],
  })
  .refine((o) => !(o.daemon === 'socket' && o.socketPath === undefined), { error: "daemon: 'socket' needs socketPath", path: ['socketPath'] })
  .refine((o) => !(o.socketPath !== undefined && o.daemon !== undefined && o.daemon !== 'socket'), {
    error: 'socketPath is only for daemon: "socket"',
    path: ['socketPath'],
  })
  .refine((o) => !(o.labNetnsPath !== undefined && o.socketPath === undefined), {
    error: 'labNetnsPath describes the daemon at socketPath',
    path: ['labNetnsPath'],
  })
  .meta({ id: 'sandcheck-docker-options', title: 'docker backend options' });

export type DockerOptions = z.input<typeof DockerOptionsSchema>;
export type ResolvedDockerOptions = z.output<typeof DockerOptionsSchema>;
