import type { PolicyItem } from '../../model/backend-contract.js';
import { ADAPTER_CLAIMS, IMAGE_AT_FIRST_BOX, type PresetDefinition } from './model.js';
import { ensurePodmanRootfs } from './podman-rootfs.js';

/** The probe image's unprivileged user (backends/docker/image.ts writes it into /etc/passwd). */
const BOX_UID = 65529;
const PODMAN = '/usr/bin/podman';

/**
 * Runs in a private mount namespace (`unshare --mount`), as `sh -c SCRIPT sandcheck-podman RUN ENV WORKSPACE STATE ARGS...`.
 * - crun 1.8 refuses a hybrid cgroup host ("cgroups in hybrid mode not supported"): the v2 hierarchy is unmounted in
 *   this namespace only, so podman and its runtime see plain cgroup v1.
 * - podman refuses a runroot longer than 50 characters: the environment's own directory is bound at a short fixed
 *   path, visible in this namespace only.
 * - podman's storage and state live in the environment's own `{tmp}` (removed with it), never in /var/lib/containers.
 * - The container's cgroup goes under the launcher's (sandcheck's counting cgroup), so the counters and the process
 *   scan see the box and destroy kills whatever of it survives; podman creates that parent in the controllers
 *   sandcheck does not count too (the counting cgroup removes those at destroy). podman and conmon themselves
 *   (`--cgroups no-conmon`: conmon stays with podman) move to the counting cgroup's `.tool` sibling: not counted as
 *   the box (counted, they made a box at its --pids-limit look past it), killed and removed with it.
 */
const SCRIPT = [
  'umount /sys/fs/cgroup/unified 2>/dev/null',
  'rid=$1 eid=$2 ws=$3 st=$4; shift 4',
  'mkdir -p "$st/run" /run/sandcheck/podman-run && mount --bind "$st/run" /run/sandcheck/podman-run || exit 125',
  "cg=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)",
  'if [ "$cg" != / ]; then for d in /sys/fs/cgroup/*; do if grep -qx $$ "$d$cg/cgroup.procs" 2>/dev/null; then mkdir -p "$d$cg.tool" && echo $$ > "$d$cg.tool/cgroup.procs"; fi; done; fi',
  `exec ${PODMAN} --root "$st/root" --runroot /run/sandcheck/podman-run --tmpdir "$st/tmp" --network-config-dir "$st/net" --cgroup-manager cgroupfs --events-backend file \\`,
  '  run --name "sandcheck-$rid-$eid" --label "sandcheck.run=$rid" --cgroups no-conmon --cgroup-parent "$cg" --volume "$ws:$ws" "$@"',
].join('\n');

interface Variant {
  name: string;
  summary: string;
  install: string;
  runtime: readonly string[];
  limits: readonly string[];
  claims: readonly PolicyItem[];
  notClaimedReasons: Partial<Record<PolicyItem, string>>;
}

const COMMON_REASONS: Partial<Record<PolicyItem, string>> = {
  'files.writeScope': 'the workspace is a host directory bound in; the write scope is not declared from the flags yet',
  'files.protected': 'podman makes no path inside the bound workspace read-only',
  'files.denyRead': 'podman hides no file inside the bound workspace',
  'resources.diskMb': 'podman sizes no container filesystem here: --read-only leaves an unsized tmpfs on /tmp, the workspace is a host directory bound in',
  'output.sanitized': "podman run passes the program's output through unchanged",
};

function podmanPreset(v: Variant): PresetDefinition {
  return {
    name: v.name,
    summary: v.summary,
    install: v.install,
    requires: [
      { binary: 'podman', install: v.install },
      { binary: v.runtime[1] ?? 'podman', install: v.install },
      { binary: '/usr/libexec/podman/catatonit', install: v.install },
      { binary: 'unshare', install: 'apt-get install -y util-linux' },
      { binary: 'tar', install: 'apt-get install -y tar' },
    ],
    image: () => ensurePodmanRootfs(BOX_UID),
    config() {
      return Promise.resolve({
        configDir: '/',
        raw: {
          name: v.name,
          description: v.summary,
          shape: 'one-shot',
          image: IMAGE_AT_FIRST_BOX,
          claims: [...v.claims, ...ADAPTER_CLAIMS],
          notClaimedReasons: { ...COMMON_REASONS, ...v.notClaimedReasons },
          boxUid: BOX_UID,
          workspace: 'disk-image',
          boxWorkspace: '{workspace}',
          version: { argv: [PODMAN, '--version'] },
          exec: {
            env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' },
            argv: [
              '/usr/bin/unshare',
              '--mount',
              '--propagation',
              'private',
              '--',
              '/bin/sh',
              '-c',
              SCRIPT,
              'sandcheck-podman',
              '{runId}',
              '{envId}',
              '{workspace}',
              '{tmp}',
              ...v.runtime,
              '--rm',
              '--interactive',
              '--init',
              '--pull',
              'never',
              '--network',
              'none',
              '--log-driver',
              'none',
              '--user',
              `${BOX_UID}:${BOX_UID}`,
              '--cap-drop',
              'ALL',
              '--security-opt',
              'no-new-privileges',
              '--read-only',
              '--memory',
              '{memoryBytes}',
              '--memory-swap',
              '{memoryBytes}',
              '--cpus',
              '{cpus}',
              ...v.limits,
              // Root here lacks CAP_SYS_RESOURCE: the runtime cannot raise these rlimits to podman's defaults.
              '--ulimit',
              'nofile=1024:20000',
              '--ulimit',
              'nproc=1024:1024',
              '--workdir',
              '{boxCwd}',
              '{readOnly...}',
              '{env...}',
              '--rootfs',
              '{image}',
              '{argv...}',
            ],
            envArg: ['--env', '{name}={value}'],
            readOnlyArg: ['--volume', '{hostPath}:{boxPath}:ro'],
            stdin: 'pipe',
          },
        },
      });
    },
  };
}

const CONTAINER_CLAIMS: readonly PolicyItem[] = [
  'files.hostPaths',
  'files.readOnlyInput',
  'network.egress',
  'identity.unprivileged',
  'identity.hostCredentials',
  'lifecycle.freshEnvironment',
  'resources.memoryMb',
  'resources.cpus',
];

/** Rootful podman with crun: a read-only root filesystem built by sandcheck, no network, no capabilities, cgroup limits. */
export const podmanCrun: PresetDefinition = podmanPreset({
  name: 'podman',
  summary: 'rootful podman (crun) --network none --read-only --cap-drop ALL, non-root user, --memory/--cpus/--pids-limit, inputs :ro',
  install: 'apt-get install -y podman crun catatonit',
  runtime: ['--runtime', '/usr/bin/crun'],
  limits: ['--pids-limit', '{pidsMax}'],
  claims: [...CONTAINER_CLAIMS, 'resources.processes'],
  notClaimedReasons: {},
});

/** Rootful podman with gVisor's runsc as the OCI runtime (its own network off too: runsc refuses the host's namespace). */
export const podmanRunsc: PresetDefinition = podmanPreset({
  name: 'podman-runsc',
  summary: 'rootful podman with gVisor runsc --network none --read-only --cap-drop ALL, non-root user, --memory/--cpus, inputs :ro',
  install: 'apt-get install -y podman runsc catatonit',
  runtime: ['--runtime', '/usr/bin/runsc', '--runtime-flag', 'network=none'],
  limits: [],
  claims: CONTAINER_CLAIMS,
  notClaimedReasons: { 'resources.processes': 'no --pids-limit under runsc: gVisor kills the whole sandbox when a pids limit is reached' },
});
