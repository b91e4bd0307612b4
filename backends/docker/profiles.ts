import type { Policy } from '../../harness/model/policy.js';
import { POLICY_ITEMS, type Capabilities, type PolicyItem } from '../contract.js';
import type { HostConfigSpec } from './client.js';
import type { ProfileName } from './options.js';

/** What a profile sets up. Pure data: `hostConfigFor` and `capabilitiesFor` turn it into Docker and contract terms. */
export interface Profile {
  name: ProfileName;
  description: string;
  /** 'root' = Docker's default user (uid 0 with the default capability set). */
  user: 'root' | 'box';
  readOnlyRoot: boolean;
  network: 'bridge' | 'none';
  capDropAll: boolean;
  noNewPrivileges: boolean;
  /** `--init`: a tiny PID 1 (docker-init) that reaps the orphans execs leave. */
  init: boolean;
  gvisor: boolean;
  pidsLimit: boolean;
  /** A sized tmpfs on /tmp (otherwise /tmp is in the writable image layer). */
  tmpTmpfs: boolean;
}

export const PROFILES: Record<ProfileName, Profile> = {
  'docker-default': {
    name: 'docker-default',
    description:
      "Docker as a team gets it from `docker run` with only the policy's limits (--memory, --cpus, --pids-limit): root with Docker's default capabilities, writable image layer, default bridge network",
    user: 'root',
    readOnlyRoot: false,
    network: 'bridge',
    capDropAll: false,
    noNewPrivileges: false,
    init: false,
    gvisor: false,
    pidsLimit: true,
    tmpTmpfs: false,
  },
  'docker-hardened': {
    name: 'docker-hardened',
    description:
      'Docker (runc) hardened: dedicated non-root uid, --cap-drop ALL, no-new-privileges, read-only root, sized tmpfs /tmp and workspace, --network none, memory/cpu/pids limits, --init',
    user: 'box',
    readOnlyRoot: true,
    network: 'none',
    capDropAll: true,
    noNewPrivileges: true,
    init: true,
    gvisor: false,
    pidsLimit: true,
    tmpTmpfs: true,
  },
  gvisor: {
    name: 'gvisor',
    description: 'gVisor (runsc, --network=none) under Docker with the hardened settings; no pids limit (see capabilities)',
    user: 'box',
    readOnlyRoot: true,
    network: 'none',
    capDropAll: true,
    noNewPrivileges: true,
    init: true,
    gvisor: true,
    pidsLimit: false,
    tmpTmpfs: true,
  },
};

export const WORKSPACE = '/work';
const MIB = 1024 * 1024;

export interface HostConfigInput {
  policy: Policy;
  volumeName: string;
  cgroupParent?: string;
  gvisorRuntime: string;
}

/** The policy's limits and the profile's hardening as a Docker HostConfig. */
export function hostConfigFor(p: Profile, i: HostConfigInput): HostConfigSpec {
  const { policy } = i;
  const memory = policy.resources.memoryMb * MIB;
  const hc: HostConfigSpec = {
    Memory: memory,
    // Equal to Memory: no swap on top of the limit (Docker's default would be twice the limit).
    MemorySwap: memory,
    NanoCpus: Math.round(policy.resources.cpus * 1e9),
    ReadonlyRootfs: p.readOnlyRoot,
    Tmpfs: p.tmpTmpfs ? { '/tmp': `rw,nosuid,nodev,size=${policy.resources.diskMb}m,mode=1777` } : {},
    Mounts: [{ Type: 'volume', Source: i.volumeName, Target: WORKSPACE, ReadOnly: false }],
    // Docker's own name for its default bridge network ("default" means the same).
    NetworkMode: p.network === 'bridge' ? 'bridge' : 'none',
    Init: p.init,
    // Output goes through the attach stream with the backend's cap; nothing is logged to the daemon's disk.
    LogConfig: { Type: 'none', Config: {} },
  };
  if (p.pidsLimit) hc.PidsLimit = policy.resources.processes;
  if (p.capDropAll) hc.CapDrop = ['ALL'];
  if (p.noNewPrivileges) hc.SecurityOpt = ['no-new-privileges'];
  if (p.gvisor) hc.Runtime = i.gvisorRuntime;
  if (i.cgroupParent !== undefined) hc.CgroupParent = i.cgroupParent;
  return hc;
}

/** Options of the local driver's tmpfs volume that is the workspace: sized, sticky, root-owned. */
export function workspaceVolumeOptions(policy: Policy): Record<string, string> {
  // mode 1777 + root owner: the box may add files but cannot remove or rename the root-owned inputs.
  return { type: 'tmpfs', device: 'tmpfs', o: `size=${policy.resources.diskMb}m,mode=1777,nosuid,nodev` };
}

export interface DaemonPlacement {
  /** The daemon runs inside this run's lab (a lab daemon): network probes meet only decoys. */
  inLab: boolean;
  /** How the daemon was reached, for messages. */
  endpoint: string;
}

const NOT_SANITIZED = 'the docker backend passes the box output through unchanged; escaping control bytes is left to whoever displays it';

/**
 * What each profile really enforces. `assumePolicy` claims everything a team would believe (so the probes
 * run and show the weaknesses), except network.egress outside a lab: network probes are never sent from a
 * daemon that is not inside the run's lab.
 */
export function capabilitiesFor(p: Profile, policy: Policy, daemon: DaemonPlacement, assumePolicy: boolean): Capabilities {
  const reasons: Partial<Record<PolicyItem, string>> = {};
  if (!daemon.inLab) {
    reasons['network.egress'] =
      `the Docker daemon (${daemon.endpoint}) is not inside the run's lab: its containers would send the network probes to the real network. ` +
      'Use the lab daemon (startLabDaemon) so they meet only decoys, or a --live-network run that accepts real traffic';
  } else if (p.network === 'bridge') {
    reasons['network.egress'] =
      "Docker's default bridge network: the box reaches everything the daemon's network namespace reaches (a NAT to the host's network outside a lab)";
  } else if (policy.network.mode === 'allowlist' && policy.network.allow.length > 0) {
    reasons['network.egress'] = 'the docker backend can only cut the network off (--network none); an allowlist needs a filtering proxy';
  }
  if (p.user === 'root') {
    reasons['identity.unprivileged'] = "the box runs as root (uid 0 on the host too, without a user namespace) with Docker's default capabilities";
    reasons['files.readOnlyInput'] = 'root in the box (CAP_DAC_OVERRIDE, CAP_FOWNER) can overwrite or remove any input file';
  }
  if (!p.readOnlyRoot) {
    reasons['resources.diskMb'] =
      "the container's writable image layer has no size limit (--storage-opt size needs an XFS data-root with pquota); only the workspace is a sized tmpfs";
  }
  if (!p.pidsLimit) {
    reasons['resources.processes'] =
      "gVisor (runsc 2022) charges the sandbox's own host threads to the pids cgroup: a pids limit crashes the whole sandbox (exit 2) instead of refusing a fork, so none is set";
  }
  reasons['output.sanitized'] = NOT_SANITIZED;

  if (assumePolicy) {
    const claimed = POLICY_ITEMS.filter((item) => item !== 'output.sanitized' && !(item === 'network.egress' && !daemon.inLab));
    const kept: Partial<Record<PolicyItem, string>> = { 'output.sanitized': NOT_SANITIZED };
    if (!daemon.inLab && reasons['network.egress']) kept['network.egress'] = reasons['network.egress'];
    return { isolation: 'sandbox', enforces: claimed, notEnforcedReasons: kept };
  }
  const enforces = POLICY_ITEMS.filter((item) => reasons[item] === undefined);
  return { isolation: 'sandbox', enforces, notEnforcedReasons: reasons };
}
