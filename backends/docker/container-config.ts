import { z } from 'zod';
import { POLICY_ITEMS } from '../../model/backend-contract.js';

/**
 * The user's own container configuration, in Docker's own key names (paste `Config` and `HostConfig`
 * from `docker inspect`). sandcheck adds only what makes it an environment: the workspace volume at
 * /work, a keep-alive main process, its labels, a cgroup parent for counting, and no logging.
 *
 * Numbers that come from the policy may be written as `policy` (Memory, NanoCpus, PidsLimit); Tmpfs
 * options may contain `{diskMb}`, User may contain `{boxUid}`. The built-in profiles are presets in this
 * format (profiles.ts).
 */

const policyOr = <T extends z.ZodType>(t: T) => z.union([t, z.literal('policy')]);

const MountSchema = z.strictObject({
  Type: z.enum(['bind', 'volume', 'tmpfs']),
  Source: z.string().optional(),
  Target: z.string().regex(/^\//),
  ReadOnly: z.boolean().optional(),
  TmpfsOptions: z.strictObject({ SizeBytes: z.number().int().positive().optional(), Mode: z.number().int().optional() }).optional(),
  BindOptions: z.strictObject({ Propagation: z.string().optional() }).optional(),
});

const UlimitSchema = z.strictObject({ Name: z.string().min(1), Soft: z.number().int(), Hard: z.number().int() });
const DeviceSchema = z.strictObject({
  PathOnHost: z.string().regex(/^\//),
  PathInContainer: z.string().regex(/^\//),
  CgroupPermissions: z.string().regex(/^[rwm]+$/),
});

/** Keys `docker inspect` prints that say nothing about isolation here: accepted and ignored. */
const IGNORED_HOST_KEYS = [
  'ContainerIDFile',
  'LogConfig',
  'PortBindings',
  'RestartPolicy',
  'AutoRemove',
  'VolumeDriver',
  'VolumesFrom',
  'ConsoleSize',
  'Dns',
  'DnsOptions',
  'DnsSearch',
  'ExtraHosts',
  'GroupAdd',
  'Cgroup',
  'Links',
  'OomScoreAdj',
  'PublishAllPorts',
  'UTSMode',
  'ShmSize',
  'Isolation',
  'CpuShares',
  'BlkioWeight',
  'BlkioWeightDevice',
  'BlkioDeviceReadBps',
  'BlkioDeviceWriteBps',
  'BlkioDeviceReadIOps',
  'BlkioDeviceWriteIOps',
  'CpuRealtimePeriod',
  'CpuRealtimeRuntime',
  'CpusetCpus',
  'CpusetMems',
  'DeviceCgroupRules',
  'DeviceRequests',
  'MemoryReservation',
  'MemorySwappiness',
  'OomKillDisable',
  'MaskedPaths',
  'ReadonlyPaths',
  'CgroupnsMode',
  'KernelMemory',
  'KernelMemoryTCP',
  'CpuCount',
  'CpuPercent',
  'IOMaximumIOps',
  'IOMaximumBandwidth',
  'CgroupParent',
  'Annotations',
] as const;
const IGNORED_CONFIG_KEYS = [
  'Hostname',
  'Domainname',
  'AttachStdin',
  'AttachStdout',
  'AttachStderr',
  'ExposedPorts',
  'Tty',
  'OpenStdin',
  'StdinOnce',
  'Cmd',
  'Entrypoint',
  'Volumes',
  'WorkingDir',
  'OnBuild',
  'Labels',
  'StopSignal',
  'StopTimeout',
  'Healthcheck',
  'ArgsEscaped',
  'MacAddress',
  'NetworkDisabled',
  'Shell',
] as const;
const IGNORED_TOP_KEYS = [
  'Id',
  'Created',
  'Path',
  'Args',
  'State',
  'ResolvConfPath',
  'HostnamePath',
  'HostsPath',
  'LogPath',
  'Name',
  'RestartCount',
  'Driver',
  'Platform',
  'MountLabel',
  'ProcessLabel',
  'AppArmorProfile',
  'ExecIDs',
  'GraphDriver',
  'Mounts',
  'NetworkSettings',
  'SizeRw',
  'SizeRootFs',
] as const;
const ignored = (keys: readonly string[]) => Object.fromEntries(keys.map((k) => [k, z.unknown().optional()]));

export const HostConfigSchema = z.strictObject({
  NetworkMode: z.string().min(1).default('none'),
  CapAdd: z.array(z.string()).nullable().default(null),
  CapDrop: z.array(z.string()).nullable().default(null),
  Privileged: z.boolean().default(false),
  /** `seccomp=<path to a JSON profile>` (read and inlined), `seccomp=unconfined`, `apparmor=<loaded profile>`, `no-new-privileges[:true]`. */
  SecurityOpt: z.array(z.string()).nullable().default(null),
  Binds: z.array(z.string()).nullable().default(null),
  Mounts: z.array(MountSchema).nullable().default(null),
  Tmpfs: z.record(z.string().regex(/^\//), z.string()).nullable().default(null),
  ReadonlyRootfs: z.boolean().default(false),
  Runtime: z.string().min(1).optional(),
  PidsLimit: policyOr(z.number().int()).nullable().default(null),
  Memory: policyOr(z.number().int().nonnegative()).default(0),
  MemorySwap: policyOr(z.number().int()).optional(),
  NanoCpus: policyOr(z.number().int().nonnegative()).default(0),
  Ulimits: z.array(UlimitSchema).nullable().default(null),
  Devices: z.array(DeviceSchema).nullable().default(null),
  Sysctls: z.record(z.string(), z.string()).nullable().default(null),
  IpcMode: z.string().default('private'),
  PidMode: z.string().default(''),
  Init: z.boolean().nullable().default(null),
  UsernsMode: z.string().default(''),
  ...ignored(IGNORED_HOST_KEYS),
});

export const ContainerConfigSchema = z
  .strictObject({
    /** How reports name this backend (default "docker"). */
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]{0,40}$/)
      .optional(),
    description: z.string().optional(),
    /**
     * What the configuration enforces. Default: derived from the settings (no network → network.egress,
     * a PidsLimit → resources.processes, …). Given explicitly, exactly these are claimed and the probes verify them.
     */
    claims: z.array(z.enum(POLICY_ITEMS)).optional(),
    Image: z.string().min(1).optional(),
    Config: z
      .strictObject({
        Image: z.string().min(1).optional(),
        /** "uid[:gid]" numeric (names cannot be resolved outside the image); "" or "root" = root. `{boxUid}` allowed. */
        User: z.string().default(''),
        Env: z.array(z.string()).nullable().default(null),
        ...ignored(IGNORED_CONFIG_KEYS),
      })
      .default({ User: '', Env: null }),
    HostConfig: HostConfigSchema.default(HostConfigSchema.parse({})),
    ...ignored(IGNORED_TOP_KEYS),
  })
  .superRefine((c, ctx) => {
    if (c.Image !== undefined && c.Config.Image !== undefined && c.Image !== c.Config.Image)
      ctx.addIssue({ code: 'custom', path: ['Image'], message: 'Image and Config.Image differ' });
    const user = c.Config.User.replaceAll('{boxUid}', '1');
    if (user !== '' && user !== 'root' && !/^\d+(:\d+)?$/.test(user)) {
      ctx.addIssue({
        code: 'custom',
        path: ['Config', 'User'],
        message: 'a numeric "uid[:gid]" (user names cannot be resolved outside the image), or "" / "root"',
      });
    }
    for (const [i, o] of (c.HostConfig.SecurityOpt ?? []).entries()) {
      if (!/^(no-new-privileges(:(true|false))?|seccomp[=:].+|apparmor[=:].+|label[=:].+)$/.test(o))
        ctx.addIssue({ code: 'custom', path: ['HostConfig', 'SecurityOpt', i], message: `unsupported security option "${o}"` });
    }
  })
  .meta({ id: 'sandcheck-docker-container-config', title: 'sandcheck docker container configuration (--backend docker --backend-config FILE)' });

export type ContainerConfig = z.output<typeof ContainerConfigSchema>;
export type ContainerConfigInput = z.input<typeof ContainerConfigSchema>;
export type HostConfig = z.output<typeof HostConfigSchema>;
