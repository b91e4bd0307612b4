import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { Policy } from '../../model/policy.js';
import type { Backend, BackendContext, Capabilities, Environment, PolicyItem } from '../../model/backend-contract.js';
import { commandArgv, type BoxPlan } from './argv.js';
import { BwrapEnvironment, ENV_MARKER, SECCOMP_FILE } from './bwrap-environment.js';
import { cgroupNameFor, SIBLING_PREFIXES, type CgroupLimits, type EnvCgroup, type LimitName } from './cgroups.js';
import { boxSeccompFilter } from './seccomp.js';
import { createEnvRoot, ensurePrivateDir, ownerRecord, removeEnvRoot, type Ownership, type SizedFs } from './workspace.js';
import { markOwnCounters } from '../own-counters.js';
import type { BwrapRuntime } from './runtime.js';

export { DEFAULT_STATE_DIR, resolveRuntime, type BwrapRuntime } from './runtime.js';

export { ENV_MARKER };

const MIB = 1024 * 1024;
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

const WORKSPACE_WORDS = { 'disk-image': 'sized ext4 image', tmpfs: 'sized tmpfs', 'host-dir': 'host-directory' } as const;

/** Claimed by every variant: options that weaken these keep claiming them, so a probe has to catch it. */
const ALWAYS: readonly PolicyItem[] = [
  'files.hostPaths',
  'files.readOnlyInput',
  // Binding a host tree read-write (extraBinds) keeps it claimed: write-outside-scope must catch it.
  'files.writeScope',
  'identity.unprivileged',
  'identity.hostCredentials',
  'lifecycle.freshEnvironment',
  // The harness's exporter applies the policy's export limits after getFiles; getFiles reads at most the
  // per-file cap of each regular file and never follows a link.
  'exports.limits',
  'posture.namespaces',
  'posture.hostMounts',
  'posture.capabilityBounding',
  'posture.devices',
];

/** The seccomp filter file inside an environment's root (written at create, gone with the root). */

const LIMIT_ITEM: Record<LimitName, PolicyItem> = {
  memory: 'resources.memoryMb',
  pids: 'resources.processes',
  cpu: 'resources.cpus',
};

export class BwrapBackend implements Backend {
  readonly name = 'bwrap';
  readonly description: string;

  constructor(readonly runtime: BwrapRuntime) {
    markOwnCounters(this);
    const o = runtime.opts;
    const weakened = [
      o.envFix === 'none' ? 'envFix none' : '',
      o.shareNetwork ? 'shared network' : '',
      o.extraBinds.length > 0 ? `${o.extraBinds.length} extra bind(s)` : '',
      o.unprivilegedUid === null ? 'no uid drop' : '',
      o.unshareUser ? '' : 'host user namespace',
      o.unsharePid ? '' : 'host pid namespace',
      o.seccomp ? '' : 'no seccomp filter',
      o.wallClock ? '' : 'no wall clock',
      o.outputCap ? '' : 'no output cap',
      o.teardown === 'thorough' ? '' : 'launcher-tree teardown',
      o.downloadApi === 'lstat' ? '' : 'naive download API',
      o.readOnlyInputs === 'enforced' ? '' : 'read-only inputs ignored',
      o.protectedPaths === 'read-only' ? '' : 'protected paths writable',
      o.denyReadPaths === 'hidden' ? '' : 'deny-listed files readable',
      o.misdeclare ? 'MISDECLARED: claims every policy item (positive controls only)' : '',
    ].filter(Boolean);
    this.description = `bubblewrap: namespaces, read-only /usr, ${WORKSPACE_WORDS[runtime.workspace]} workspace, setpriv to a dedicated uid, ${
      runtime.cgroups.hierarchy ? runtime.cgroups.hierarchy.describe() : 'no cgroup'
    } limits${weakened.length > 0 ? ` (deliberately weakened: ${weakened.join(', ')})` : ''}`;
  }

  capabilities(policy: Policy): Capabilities {
    const rt = this.runtime;
    const o = rt.opts;
    const enforces: PolicyItem[] = [...ALWAYS];
    const reasons: Partial<Record<PolicyItem, string>> = {};
    // An item is claimed when nothing turned it off — or always, by a deliberately misdeclaring variant.
    const claimUnless = (item: PolicyItem, why: string | undefined): void => {
      if (why === undefined || o.misdeclare) enforces.push(item);
      else reasons[item] = why;
    };
    // What bwrap has no code for at all is never claimed, not even by misdeclare.
    if (policy.network.mode === 'off' || policy.network.allow.length === 0) enforces.push('network.egress');
    else reasons['network.egress'] = 'bwrap can only cut the network off entirely (--unshare-net); an allowlist needs a filtering proxy';
    reasons['output.sanitized'] = 'bwrap passes the box output through unchanged; escaping control bytes is left to whoever displays it';
    reasons['isolation.separateKernel'] = 'bubblewrap boxes run on the host kernel';
    // Claimed even when the option turns the filter off (a weakened variant the probe must catch); never without a filter for this architecture.
    const seccomp = boxSeccompFilter();
    if ('filter' in seccomp) enforces.push('posture.seccomp');
    else reasons['posture.seccomp'] = seccomp.reason;
    const cg = rt.cgroups;
    for (const limit of ['memory', 'pids', 'cpu'] as const) {
      claimUnless(
        LIMIT_ITEM[limit],
        cg.hierarchy === undefined
          ? `cannot create cgroups: ${cg.reason}`
          : !o.limits[limit]
            ? `the ${limit} cgroup limit is turned off in the backend options (limits.${limit}: false)`
            : cg.hierarchy.unavailable[limit],
      );
    }
    claimUnless(
      'files.protected',
      o.protectedPaths === 'read-only'
        ? undefined
        : 'protected paths inside the workspace are not bound read-only (protectedPaths: off): the box may write git hooks, rc files and agent settings',
    );
    claimUnless(
      'files.denyRead',
      o.denyReadPaths !== 'hidden'
        ? 'deny-listed files inside the workspace are not hidden (denyReadPaths: off): the box may read .env files and keys'
        : (policy.files.denyRead?.length ?? 0) === 0
          ? `policy ${policy.name} names no file to deny (files.denyRead unset): nothing is hidden`
          : undefined,
    );
    claimUnless('resources.wallSeconds', o.wallClock ? undefined : "the backend's own wall clock is turned off in the backend options (wallClock: false)");
    claimUnless('output.maxBytes', o.outputCap ? undefined : "the backend's own output cap is turned off in the backend options (outputCap: false)");
    claimUnless(
      'lifecycle.destroyAfter',
      o.teardown === 'thorough'
        ? undefined
        : "teardown kills only the launcher's process tree (teardown: launcher-tree, no cgroup): a daemon that left it survives",
    );
    claimUnless(
      'resources.diskMb',
      rt.workspace !== 'host-dir'
        ? undefined
        : 'the workspace (/work) is a plain host directory without a size limit (workspace: host-dir); only /tmp is a sized tmpfs',
    );
    return { isolation: 'sandbox', enforces, notEnforcedReasons: reasons, lightBoxes: true };
  }

  async preflight(): Promise<void> {
    const rt = this.runtime;
    const hint = 'apt-get install -y bubblewrap util-linux';
    if (process.platform !== 'linux') throw new SandcheckError('BACKEND_UNAVAILABLE', `bubblewrap needs Linux (this is ${process.platform})`);
    if (!rt.tools.bwrap) throw new SandcheckError('BACKEND_UNAVAILABLE', 'bwrap (bubblewrap) is not installed', { hint });
    if (rt.dropToUid !== undefined) {
      if (!rt.tools.setpriv) throw new SandcheckError('BACKEND_UNAVAILABLE', 'setpriv is not installed (needed to drop to the box uid)', { hint });
      if (!rt.isRoot) {
        throw new SandcheckError('BACKEND_UNAVAILABLE', `dropping to uid ${rt.dropToUid} needs root`, {
          hint: 'run sandcheck as root, or set unprivilegedUid: null to run the box as your own (unprivileged) uid',
        });
      }
      const passwd = (await readFile('/etc/passwd', 'utf8').catch(() => '')).split('\n');
      const owner = passwd.find((l) => l.split(':')[2] === String(rt.dropToUid));
      if (owner) {
        throw new SandcheckError('BACKEND_UNAVAILABLE', `uid ${rt.dropToUid} belongs to the account "${owner.split(':')[0]}": the box needs a uid of its own`, {
          hint: 'choose another unprivilegedUid in the bwrap backend options',
        });
      }
    }
    if (rt.workspace !== 'host-dir' && !rt.isRoot) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `a ${rt.workspace} workspace (the disk limit) needs root to mount`, {
        hint: 'run as root, or set workspace: "host-dir"',
      });
    }
    if (rt.workspace === 'disk-image' && !rt.tools.mkfs) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'a disk-image workspace needs mkfs.ext4', {
        hint: 'apt-get install -y e2fsprogs, or set workspace: "tmpfs"',
      });
    }
    if (rt.opts.cgroups.mode !== 'auto' && rt.opts.cgroups.mode !== 'off' && rt.cgroups.hierarchy === undefined) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `cgroups (${rt.opts.cgroups.mode}) requested but unusable: ${rt.cgroups.reason}`, {
        hint: 'run as root on a host with cgroups mounted, or set cgroups.mode to "auto"',
      });
    }
    // The only sure test of user namespaces: start a trivial box exactly as the real ones start.
    const cmd = trialCommand(rt);
    const [file, ...args] = cmd;
    const r = await execa(file ?? 'bwrap', args, { env: {}, extendEnv: false, reject: false, timeout: 10_000, stdin: 'ignore' });
    if (r.exitCode !== 0) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `bwrap cannot create its namespaces here: ${r.stderr.trim() || r.shortMessage}`, {
        hint: 'enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 on older Debian kernels; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+)',
      });
    }
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const rt = this.runtime;
    if (!SAFE_ID.test(ctx.runId) || SIBLING_PREFIXES.some((p) => ctx.runId.startsWith(p))) {
      throw new SandcheckError('HARNESS', `run id "${ctx.runId}" is not safe in cgroup and directory names (or starts like another backend's cgroups)`);
    }
    if (rt.opts.shareNetwork && !ctx.lab) {
      throw new SandcheckError('CONFIG_INVALID', 'shareNetwork: true is only allowed inside a lab: without one the box would get the host network', {
        hint: 'run with a lab, or leave shareNetwork off',
      });
    }
    if (ctx.lab && !rt.tools.nsenter) {
      throw new SandcheckError('BACKEND_UNAVAILABLE', 'nsenter is not installed (needed to start boxes inside the lab)', {
        hint: 'apt-get install -y util-linux',
      });
    }
    const envId = randomBytes(4).toString('hex');
    const key = `${ctx.runId}-${envId}`;
    const name = cgroupNameFor(key);
    const box: Ownership | undefined = rt.dropToUid === undefined ? undefined : { uid: rt.dropToUid, gid: rt.dropToUid };
    await ensurePrivateDir(rt.stateDir, 0o711, rt.isRoot ? 0 : process.getuid?.());
    const bytes = policy.resources.diskMb * MIB;
    const sized: SizedFs | undefined =
      rt.workspace === 'tmpfs'
        ? { kind: 'tmpfs', bytes }
        : rt.workspace === 'disk-image' && rt.tools.mkfs
          ? { kind: 'disk-image', bytes, image: join(ctx.scratchDir, `bwrap-disk-${key}.img`), mkfs: rt.tools.mkfs }
          : undefined;
    const root = await createEnvRoot(
      join(rt.stateDir, key),
      name,
      sized,
      box,
      await ownerRecord(ctx.runId, envId, sized !== undefined, sized?.kind === 'disk-image' ? sized.image : undefined),
    );
    let cg: EnvCgroup | undefined;
    const hierarchy = rt.cgroups.hierarchy;
    if (hierarchy) {
      const want = (l: LimitName): boolean => rt.opts.limits[l] && hierarchy.unavailable[l] === undefined;
      const limits: CgroupLimits = {
        ...(want('memory') ? { memoryBytes: policy.resources.memoryMb * MIB } : {}),
        ...(want('pids') ? { pids: policy.resources.processes } : {}),
        ...(want('cpu') ? { cpuCores: policy.resources.cpus } : {}),
      };
      try {
        cg = await hierarchy.create(name, limits);
      } catch (err) {
        // Capabilities claimed these limits: never run the box without them (fail closed).
        await removeEnvRoot(root.root, root.mounted, name, root.image);
        throw new SandcheckError('HARNESS', `cannot create cgroups: ${errorMessage(err)}`, { cause: err });
      }
    }
    const seccomp = rt.opts.seccomp ? boxSeccompFilter() : undefined;
    if (seccomp && 'filter' in seccomp) await writeFile(join(root.root, SECCOMP_FILE), seccomp.filter, { mode: 0o600 });
    if (ctx.lab && rt.opts.shareNetwork) {
      // A copy the box uid can read, whatever the lab's own directory permissions.
      await writeFile(root.resolvConf, await readFile(ctx.lab.resolvConfPath), { mode: 0o644 });
    }
    return new BwrapEnvironment(key, name, rt, policy, ctx, root, cg);
  }
}

function trialCommand(rt: BwrapRuntime): string[] {
  const plan: BoxPlan = {
    tools: rt.tools,
    uid: rt.dropToUid,
    unsharePid: rt.opts.unsharePid,
    unshareUser: rt.opts.unshareUser,
    shareNetwork: false,
    netnsPath: undefined,
    resolvConf: undefined,
    workHost: '/usr/bin', // any readable directory: the trial only needs a bind source
    tmpHost: undefined,
    tmpSizeBytes: MIB,
    readOnlyFiles: [],
    extraBinds: [],
    cwd: '',
    env: [],
    argv: ['/usr/bin/true'],
    statusFd: undefined,
  };
  return commandArgv(plan);
}
