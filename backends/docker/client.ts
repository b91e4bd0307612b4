import type { Duplex, Readable } from 'node:stream';

/**
 * The small slice of the Docker Engine API this backend uses. `dockerode-client.ts` is the only file
 * that implements it with dockerode; tests can hand the backend a fake.
 *
 * Conventions: "not found" is a value (undefined / false), never an exception; every other daemon error
 * is thrown as a `DockerApiError` carrying the HTTP status.
 */

export class DockerApiError extends Error {
  constructor(
    message: string,
    readonly statusCode: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DockerApiError';
  }
}

export interface VolumeMount {
  Type: 'volume';
  Source: string;
  Target: string;
  ReadOnly: boolean;
}

/** A mount from the user's own container configuration (Engine API shape). */
export interface UserMount {
  Type: 'bind' | 'volume' | 'tmpfs';
  Source?: string | undefined;
  Target: string;
  ReadOnly?: boolean | undefined;
  TmpfsOptions?: { SizeBytes?: number | undefined; Mode?: number | undefined } | undefined;
  BindOptions?: { Propagation?: string | undefined } | undefined;
}

/** The HostConfig fields this backend sets (a subset of the Engine API's HostConfig). */
export interface HostConfigSpec {
  Memory?: number;
  MemorySwap?: number;
  NanoCpus?: number;
  PidsLimit?: number;
  ReadonlyRootfs: boolean;
  /** mount point → tmpfs options, e.g. { '/tmp': 'rw,nosuid,nodev,size=1024m' } */
  Tmpfs: Record<string, string>;
  Mounts: (VolumeMount | UserMount)[];
  NetworkMode: string;
  CapAdd?: string[];
  CapDrop?: string[];
  Privileged?: boolean;
  Binds?: string[];
  Ulimits?: { Name: string; Soft: number; Hard: number }[];
  Devices?: { PathOnHost: string; PathInContainer: string; CgroupPermissions: string }[];
  Sysctls?: Record<string, string>;
  IpcMode?: string;
  PidMode?: string;
  UsernsMode?: string;
  SecurityOpt?: string[];
  Init: boolean;
  Runtime?: string;
  CgroupParent?: string;
  LogConfig: { Type: string; Config: Record<string, string> };
}

export interface ContainerSpec {
  name: string;
  Image: string;
  Entrypoint: string[];
  Cmd: string[];
  Env: string[];
  User: string;
  WorkingDir: string;
  Hostname: string;
  Labels: Record<string, string>;
  HostConfig: HostConfigSpec;
}

export interface ContainerState {
  Status: string;
  Running: boolean;
  Pid: number;
  ExitCode: number;
  OOMKilled: boolean;
  Error: string;
}

export interface ContainerDetails {
  Id: string;
  State: ContainerState;
  HostConfig: { NetworkMode?: string; Runtime?: string; CgroupParent?: string };
}

export interface ListedObject {
  id: string;
  name: string;
  labels: Record<string, string>;
  state?: string;
}

export interface VolumeSpec {
  Name: string;
  Driver: string;
  DriverOpts: Record<string, string>;
  Labels: Record<string, string>;
}

export interface ExecSpec {
  Cmd: string[];
  Env: string[];
  User: string;
  WorkingDir: string;
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  Tty: false;
}

export interface ExecState {
  Running: boolean;
  ExitCode: number | null;
  Pid: number;
}

/** `X-Docker-Container-Path-Stat` of the archive endpoints. */
export interface PathStat {
  name: string;
  size: number;
  /** Go's os.FileMode bits: 1<<31 directory, 1<<27 symlink, low 9 bits permissions. */
  mode: number;
  linkTarget: string;
}

export interface DaemonInfo {
  ServerVersion: string;
  Driver: string;
  CgroupDriver: string;
  CgroupVersion: string;
  Runtimes: Record<string, unknown>;
  DefaultRuntime: string;
  /** The daemon's data-root (volumes live in <root>/volumes/<name>/_data). */
  DockerRootDir: string;
  /** Podman's Docker-compatible API (its /info has BuildahVersion and Rootless, Docker's does not). */
  Podman?: boolean;
}

export interface ImageDetails {
  Id: string;
  Labels: Record<string, string>;
}

export interface DockerClient {
  /** Where the daemon is, for messages ("unix:///run/…/docker.sock"). */
  readonly endpoint: string;
  /** True when the daemon runs on this machine (a unix socket), so /proc and cgroups can be read. */
  readonly local: boolean;
  ping(signal?: AbortSignal): Promise<void>;
  info(): Promise<DaemonInfo>;
  /** The daemon's version and Engine API version (optional: a fake client need not answer). */
  version?(): Promise<{ Version: string; ApiVersion: string }>;

  createVolume(spec: VolumeSpec): Promise<void>;
  /** false when it did not exist. */
  removeVolume(name: string): Promise<boolean>;
  volumeExists(name: string): Promise<boolean>;
  listVolumes(labelFilters: readonly string[]): Promise<ListedObject[]>;

  createContainer(spec: ContainerSpec): Promise<string>;
  startContainer(id: string): Promise<void>;
  inspectContainer(id: string): Promise<ContainerDetails | undefined>;
  /** SIGKILL; a container that is not running (409) or gone (404) is not an error. */
  killContainer(id: string): Promise<void>;
  /** force + volumes; false when it did not exist. */
  removeContainer(id: string): Promise<boolean>;
  listContainers(labelFilters: readonly string[]): Promise<ListedObject[]>;

  listNetworks(labelFilters: readonly string[]): Promise<ListedObject[]>;
  removeNetwork(id: string): Promise<boolean>;

  putArchive(id: string, path: string, tar: Buffer): Promise<void>;
  /** undefined when the path does not exist. The stream is the raw tar produced inside the box: hostile. */
  getArchive(id: string, path: string, signal?: AbortSignal): Promise<{ stat: PathStat | undefined; stream: Readable } | undefined>;
  /** lstat of the last component (parents are resolved by the daemon inside the container root). */
  statPath(id: string, path: string): Promise<PathStat | undefined>;

  createExec(id: string, spec: ExecSpec): Promise<string>;
  /** The hijacked connection: multiplexed output to read, stdin to write (then end() to close it). */
  startExec(execId: string, stdin: boolean): Promise<Duplex>;
  inspectExec(execId: string): Promise<ExecState>;

  inspectImage(ref: string): Promise<ImageDetails | undefined>;
  /** `docker import`: a root filesystem tar with Dockerfile-style changes (ENV, LABEL, WORKDIR). */
  importImage(rootfsTar: Readable, repo: string, tag: string, changes: readonly string[]): Promise<void>;
  listImages(labelFilters: readonly string[]): Promise<ListedObject[]>;
  removeImage(ref: string): Promise<boolean>;
}

export function isDockerStatus(err: unknown, ...codes: number[]): boolean {
  return err instanceof DockerApiError && err.statusCode !== undefined && codes.includes(err.statusCode);
}
