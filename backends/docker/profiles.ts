import type { Policy } from '../../model/policy.js';
import { POLICY_ITEMS, type Capabilities, type PolicyItem } from '../../model/backend-contract.js';
import { SandcheckError } from '../../core/errors.js';
import type { HostConfigSpec, UserMount, VolumeMount } from './client.js';
import { ContainerConfigSchema, type ContainerConfig, type ContainerConfigInput } from './container-config.js';
import { DEFAULT_BOX_UID, type ProfileName } from './options.js';

/**
 * The built-in profiles are presets in the user's own container-configuration format (Docker's key
 * names): `hostConfigFor` and `capabilitiesFor` treat a preset and a user's file alike.
 */
export type Profile = ContainerConfig & { name: string };

const HARDENED_HOST: ContainerConfigInput['HostConfig'] = {
  NetworkMode: 'none',
  CapDrop: ['ALL'],
  SecurityOpt: ['no-new-privileges'],
  ReadonlyRootfs: true,
  Tmpfs: { '/tmp': 'rw,nosuid,nodev,size={diskMb}m,mode=1777' },
  Memory: 'policy',
  // Equal to Memory: no swap on top of the limit (Docker's default would be twice the limit).
  MemorySwap: 'policy',
  NanoCpus: 'policy',
  PidsLimit: 'policy',
  Init: true,
};

const preset = (c: ContainerConfigInput & { name: string }): Profile => ({ ...ContainerConfigSchema.parse(c), name: c.name });

export const PROFILES: Record<ProfileName, Profile> = {
  'docker-default': preset({
    name: 'docker-default',
    description:
      "Docker as a team gets it from `docker run` with only the policy's limits (--memory, --cpus, --pids-limit): root with Docker's default capabilities, writable image layer, default bridge network",
    Config: { User: '' },
    HostConfig: { NetworkMode: 'bridge', Memory: 'policy', MemorySwap: 'policy', NanoCpus: 'policy', PidsLimit: 'policy', ReadonlyRootfs: false, Init: false },
  }),
  'docker-hardened': preset({
    name: 'docker-hardened',
    description:
      'Docker (runc) hardened: dedicated non-root uid, --cap-drop ALL, no-new-privileges, read-only root, sized tmpfs /tmp and workspace, --network none, memory/cpu/pids limits, --init',
    Config: { User: '{boxUid}:{boxUid}' },
    HostConfig: HARDENED_HOST,
  }),
  gvisor: preset({
    name: 'gvisor',
    description: 'gVisor (runsc, --network=none) under Docker with the hardened settings; no pids limit (see capabilities)',
    Config: { User: '{boxUid}:{boxUid}' },
    HostConfig: { ...HARDENED_HOST, PidsLimit: null, Runtime: 'runsc' },
  }),
};

export const WORKSPACE = '/work';
const MIB = 1024 * 1024;

export interface HostConfigInput {
  policy: Policy;
  /** The workspace: the daemon's tmpfs volume, or (`bindSource`, which wins) a host directory, a mounted disk image, bound in. */
  volumeName?: string;
  bindSource?: string;
  cgroupParent?: string;
  gvisorRuntime: string;
  boxUid?: number;
  /** `seccomp=<path>` options with the file's JSON inlined (the Engine API takes the profile itself). */
  securityOpt?: readonly string[];
}

/** uid of the box as the daemon runs it (0 = root) and the `User` string for create and exec. */
export function userOf(c: ContainerConfig, boxUid = DEFAULT_BOX_UID): { user: string; uid: number } {
  const user = c.Config.User.replaceAll('{boxUid}', String(boxUid));
  if (user === '' || user === 'root') return { user: '', uid: 0 };
  return { user, uid: Number(user.split(':')[0]) };
}

/** The configured runtime is gVisor: its box processes live inside the sandbox, its pids limit behaves differently. */
export function isGvisor(c: ContainerConfig, gvisorRuntime: string): boolean {
  return c.HostConfig.Runtime !== undefined && (c.HostConfig.Runtime === gvisorRuntime || /runsc/.test(c.HostConfig.Runtime));
}

const fromPolicy = (v: number | 'policy' | null | undefined, policyValue: number): number | undefined =>
  v === 'policy' ? policyValue : v === null || v === undefined ? undefined : v;

/** The configuration as a Docker HostConfig, with the policy's values filled in and sandcheck's workspace added. */
export function hostConfigFor(c: ContainerConfig, i: HostConfigInput): HostConfigSpec {
  const h = c.HostConfig;
  const r = i.policy.resources;
  const memory = fromPolicy(h.Memory, r.memoryMb * MIB);
  const swap = fromPolicy(h.MemorySwap, r.memoryMb * MIB);
  const nano = fromPolicy(h.NanoCpus, Math.round(r.cpus * 1e9));
  const pids = fromPolicy(h.PidsLimit, r.processes);
  const tmpfs = Object.fromEntries(Object.entries(h.Tmpfs ?? {}).map(([k, v]) => [k, v.replaceAll('{diskMb}', String(r.diskMb))]));
  const hc: HostConfigSpec = {
    ...(memory ? { Memory: memory } : {}),
    ...(memory && swap !== undefined ? { MemorySwap: swap } : {}),
    ...(nano ? { NanoCpus: nano } : {}),
    ReadonlyRootfs: h.ReadonlyRootfs,
    Tmpfs: tmpfs,
    Mounts: [workspaceMount(i), ...(h.Mounts ?? [])],
    // Docker's own name for its default bridge network ("default" means the same).
    NetworkMode: h.NetworkMode === 'default' ? 'bridge' : h.NetworkMode,
    Init: h.Init === true,
    // Output goes through the attach stream with the backend's cap; nothing is logged to the daemon's disk.
    LogConfig: { Type: 'none', Config: {} },
  };
  if (pids !== undefined && pids > 0) hc.PidsLimit = pids;
  if (h.CapAdd && h.CapAdd.length > 0) hc.CapAdd = h.CapAdd;
  if (h.CapDrop && h.CapDrop.length > 0) hc.CapDrop = h.CapDrop;
  const sec = i.securityOpt ?? h.SecurityOpt ?? [];
  if (sec.length > 0) hc.SecurityOpt = [...sec];
  if (h.Privileged) hc.Privileged = true;
  if (h.Binds && h.Binds.length > 0) hc.Binds = h.Binds;
  if (h.Runtime !== undefined) hc.Runtime = h.Runtime === 'runsc' ? i.gvisorRuntime : h.Runtime;
  if (h.Ulimits && h.Ulimits.length > 0) hc.Ulimits = h.Ulimits;
  if (h.Devices && h.Devices.length > 0) hc.Devices = h.Devices;
  if (h.Sysctls && Object.keys(h.Sysctls).length > 0) hc.Sysctls = h.Sysctls;
  if (h.IpcMode !== 'private' && h.IpcMode !== '') hc.IpcMode = h.IpcMode;
  if (h.PidMode !== '') hc.PidMode = h.PidMode;
  if (h.UsernsMode !== '') hc.UsernsMode = h.UsernsMode;
  if (i.cgroupParent !== undefined) hc.CgroupParent = i.cgroupParent;
  return hc;
}

function workspaceMount(i: HostConfigInput): VolumeMount | UserMount {
  if (i.bindSource !== undefined) return { Type: 'bind', Source: i.bindSource, Target: WORKSPACE, ReadOnly: false, BindOptions: { Propagation: 'rprivate' } };
  if (i.volumeName !== undefined) return { Type: 'volume', Source: i.volumeName, Target: WORKSPACE, ReadOnly: false };
  throw new SandcheckError('HARNESS', 'hostConfigFor needs a workspace: volumeName or bindSource');
}

/** Options of the local driver's tmpfs volume that is the workspace: sized, sticky, root-owned. */
export function workspaceVolumeOptions(policy: Policy): Record<string, string> {
  // mode 1777 + root owner: the box may add files but cannot remove or rename the root-owned inputs.
  // nr_blocks (4 KiB pages), not size=: Podman's local driver takes `size` for an XFS project quota and refuses it
  // elsewhere ("Filesystem does not support Project Quota"); both daemons hand nr_blocks to mount(2) unchanged.
  return { type: 'tmpfs', device: 'tmpfs', o: `nr_blocks=${policy.resources.diskMb * 256},mode=1777,nosuid,nodev` };
}

export interface DaemonPlacement {
  /** The daemon runs inside this run's lab (a lab daemon): network probes meet only decoys. */
  inLab: boolean;
  /** How the daemon was reached, for messages. */
  endpoint: string;
}

const NOT_SANITIZED = 'the docker backend passes the box output through unchanged; escaping control bytes is left to whoever displays it';
const DANGEROUS_BINDS = /(^|:)\/(var\/)?run\/docker\.sock(:|$)|^\/proc|^\/sys|^\/:/;

/** Why each policy item is not enforced by these settings (absent = enforced), derived from the settings alone. */
export function derivedReasons(c: ContainerConfig, policy: Policy, gvisorRuntime: string): Partial<Record<PolicyItem, string>> {
  const h = c.HostConfig;
  const r = policy.resources;
  const reasons: Partial<Record<PolicyItem, string>> = {};
  const root = userOf(c).uid === 0;
  const gvisor = isGvisor(c, gvisorRuntime);
  const hostBinds = [...(h.Binds ?? []), ...(h.Mounts ?? []).filter((m) => m.Type === 'bind').map((m) => `${m.Source ?? '?'}:${m.Target}`)];
  if (h.Privileged) {
    const why = 'Privileged: every capability, every device, no seccomp or AppArmor: nothing of identity or the host filesystem holds';
    reasons['identity.unprivileged'] = why;
    reasons['identity.hostCredentials'] = why;
    reasons['files.hostPaths'] = why;
    reasons['files.readOnlyInput'] = why;
  }
  if (h.NetworkMode !== 'none') {
    reasons['network.egress'] =
      h.NetworkMode === 'bridge' || h.NetworkMode === 'default'
        ? "Docker's default bridge network: the box reaches everything the daemon's network namespace reaches (a NAT to the host's network outside a lab)"
        : `NetworkMode ${h.NetworkMode}: the box has a network`;
  } else if (policy.network.mode === 'allowlist' && policy.network.allow.length > 0) {
    reasons['network.egress'] = 'the docker backend can only cut the network off (--network none); an allowlist needs a filtering proxy';
  }
  if (root) {
    reasons['identity.unprivileged'] ??= "the box runs as root (uid 0 on the host too, without a user namespace) with Docker's default capabilities";
    reasons['files.readOnlyInput'] ??= 'root in the box (CAP_DAC_OVERRIDE, CAP_FOWNER) can overwrite or remove any input file';
  }
  if (h.CapAdd && h.CapAdd.length > 0) reasons['identity.unprivileged'] ??= `capabilities added: ${h.CapAdd.join(', ')}`;
  if (h.PidMode === 'host')
    reasons['identity.hostCredentials'] ??= 'PidMode host: the box sees every host process, and their /proc/<pid>/environ where its uid allows';
  if (h.IpcMode === 'host') reasons['identity.hostCredentials'] ??= "IpcMode host: the box shares the host's System V IPC and /dev/shm";
  if (hostBinds.some((b) => DANGEROUS_BINDS.test(b)))
    reasons['identity.hostCredentials'] ??= `a host control path is bound in (${hostBinds.filter((b) => DANGEROUS_BINDS.test(b)).join(', ')})`;
  if (hostBinds.length > 0) reasons['files.hostPaths'] ??= `host paths bound in: ${hostBinds.join(', ')}`;
  if (h.Devices && h.Devices.length > 0) reasons['files.hostPaths'] ??= `host devices: ${h.Devices.map((d) => d.PathOnHost).join(', ')}`;
  if (!h.ReadonlyRootfs) {
    reasons['resources.diskMb'] =
      "the container's writable image layer has no size limit (--storage-opt size needs an XFS data-root with pquota); only the workspace is a sized tmpfs";
  }
  const limit = (v: number | 'policy' | null | undefined, mine: number, unit: string, item: PolicyItem, none: string): void => {
    const n = v === 'policy' ? mine : (v ?? 0);
    if (n <= 0) reasons[item] = none;
    else if (n > mine) reasons[item] = `the configured limit (${n} ${unit}) is above the policy's ${mine}`;
  };
  limit(h.Memory, r.memoryMb * MIB, 'bytes', 'resources.memoryMb', 'no Memory limit');
  limit(h.NanoCpus, Math.round(r.cpus * 1e9), 'NanoCpus', 'resources.cpus', 'no NanoCpus limit');
  limit(h.PidsLimit, r.processes, 'processes', 'resources.processes', 'no PidsLimit');
  if (gvisor && reasons['resources.processes'] !== undefined && (h.PidsLimit === null || h.PidsLimit === undefined)) {
    reasons['resources.processes'] =
      "gVisor (runsc 2022) charges the sandbox's own host threads to the pids cgroup: a pids limit crashes the whole sandbox (exit 2) instead of refusing a fork, so none is set";
  }
  if (h.Privileged) reasons['files.writeScope'] = 'Privileged: the box can mount and write host filesystems';
  const writableBinds = [
    ...(h.Binds ?? []).filter((b) => !/:(?:[^:]*,)?ro(?:,[^:]*)?$/.test(b)),
    ...(h.Mounts ?? []).filter((m) => m.Type === 'bind' && m.ReadOnly !== true).map((m) => `${m.Source ?? '?'}:${m.Target}`),
  ];
  if (writableBinds.length > 0) reasons['files.writeScope'] ??= `host paths bound in read-write: ${writableBinds.join(', ')}`;
  // The workspace is the container's own: nothing re-binds paths inside it read-only.
  reasons['files.protected'] = 'the docker backend makes no path inside its workspace read-only (no read-only re-binds of .git/hooks, .git/config, rc files)';
  reasons['files.denyRead'] = 'the docker backend hides no file inside its workspace (no bind over .env, keys or other deny-listed files)';
  reasons['output.sanitized'] = NOT_SANITIZED;
  Object.assign(reasons, postureReasons(c, gvisor, hostBinds));
  return reasons;
}

/** Capabilities whose presence in the bounding set lets a box reach past its namespaces (the posture probe's list). */
const DANGEROUS_CAPS = /^(CAP_)?(ALL|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|SYS_RAWIO|DAC_READ_SEARCH|NET_ADMIN|NET_RAW|MKNOD|SYS_BOOT|BPF|PERFMON)$/i;

/** Why each posture item is not enforced by these settings (absent = enforced). */
function postureReasons(c: ContainerConfig, gvisor: boolean, hostBinds: readonly string[]): Partial<Record<PolicyItem, string>> {
  const h = c.HostConfig;
  const reasons: Partial<Record<PolicyItem, string>> = {};
  if (!gvisor) reasons['isolation.separateKernel'] = 'runc containers run on the host kernel';
  const dropsAll = (h.CapDrop ?? []).some((cap) => /^(CAP_)?ALL$/i.test(cap));
  const added = (h.CapAdd ?? []).filter((cap) => DANGEROUS_CAPS.test(cap));
  if (h.Privileged) {
    const why = 'Privileged: every capability, every device, no seccomp filter';
    reasons['posture.seccomp'] = why;
    reasons['posture.capabilityBounding'] = why;
    reasons['posture.devices'] = why;
    reasons['posture.hostMounts'] = why;
  }
  if ((h.SecurityOpt ?? []).some((o) => /^seccomp[=:]unconfined$/.test(o))) reasons['posture.seccomp'] ??= 'SecurityOpt seccomp=unconfined: no seccomp filter';
  if (added.length > 0) reasons['posture.capabilityBounding'] ??= `dangerous capabilities added: ${added.join(', ')}`;
  else if (!dropsAll) reasons['posture.capabilityBounding'] ??= "Docker's default capability set keeps NET_RAW and MKNOD (add CapDrop: [ALL])";
  const hostModes = (['PidMode', 'IpcMode', 'NetworkMode'] as const).filter((k) => h[k] === 'host');
  if (hostModes.length > 0) reasons['posture.namespaces'] = `${hostModes.join(', ')} host: the box shares the host's namespace`;
  if (hostBinds.length > 0) reasons['posture.hostMounts'] ??= `host paths bound in: ${hostBinds.join(', ')}`;
  if (h.Devices && h.Devices.length > 0) reasons['posture.devices'] ??= `host devices: ${h.Devices.map((d) => d.PathOnHost).join(', ')}`;
  return reasons;
}

/**
 * What a configuration enforces. Claims are derived from its settings unless it declares them (`claims`);
 * `assumePolicy` claims everything a team would believe (so the probes run and show the weaknesses).
 * Network egress is never claimed outside a lab: network probes are never sent from a daemon outside it.
 */
export function capabilitiesFor(c: ContainerConfig, policy: Policy, daemon: DaemonPlacement, assumePolicy: boolean, gvisorRuntime = 'runsc'): Capabilities {
  const reasons = derivedReasons(c, policy, gvisorRuntime);
  if (!daemon.inLab) {
    reasons['network.egress'] =
      `the Docker daemon (${daemon.endpoint}) is not inside the run's lab: its containers would send the network probes to the real network. ` +
      'Use the lab daemon (startLabDaemon) so they meet only decoys, or a --live-network run that accepts real traffic';
  }
  // Outside a lab the harness cannot watch the box's network: a cause outside the box, not a failure of it.
  const unseen = !daemon.inLab ? { notObservable: { 'network.egress': reasons['network.egress'] ?? '' } } : {};
  // A team trusting Docker believes the policy, not that runc brings its own kernel.
  const declared = assumePolicy ? POLICY_ITEMS.filter((i) => i !== 'output.sanitized' && i !== 'isolation.separateKernel') : c.claims;
  if (declared !== undefined) {
    const claimed = declared.filter((item) => !(item === 'network.egress' && !daemon.inLab));
    const kept: Partial<Record<PolicyItem, string>> = {};
    for (const item of POLICY_ITEMS) if (!claimed.includes(item)) kept[item] = reasons[item] ?? "not among the configuration's claims";
    return { isolation: 'sandbox', enforces: claimed, notEnforcedReasons: kept, ...unseen };
  }
  const enforces = POLICY_ITEMS.filter((item) => reasons[item] === undefined);
  return { isolation: 'sandbox', enforces, notEnforcedReasons: reasons, ...unseen };
}
