/**
 * Every shipped preset whose tool is installed here runs the whole security and task suites once, inside the run's
 * lab, under the ci policy, through the CLI exactly as a user runs it (`sandcheck run --backend preset:<name>`, which
 * first repeats the blocking adapter checks and refuses a preset that fails one). The verdicts measured on this
 * machine kind are kept as named expectations: a crossing that goes away or a new one fails the test, and so does a
 * held probe that stops holding. A preset whose tool is missing is skipped with its install command as the reason.
 *
 * Time: 1 to 4 minutes per preset on 2 busy cores; the presets are split over two test files (PRESET_FILES).
 */
import { readdir } from 'node:fs/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../adapter/check/model.js';
import { PRESETS, missingRequirements } from '../../backends/presets/catalog.js';
import type { SecurityScorecard } from '../../model/scorecard.js';
import { probeLabSupport } from '../../lab/netns/support.js';
import { taskSuite } from '../../suites/index.js';
import { readCards, sandcheck, tempOut } from './cli.js';

interface Expectation {
  /** The blocking adapter checks the preset fails (empty: it passes, and `run` trusts it). */
  adapterFails: readonly string[];
  /** The adapter checks that pass only in part, the rest not applicable (a box that writes no results): exactly these. */
  adapterPartlyNotApplicable?: readonly string[];
  /** Crossings measured here, each with the reason the judge gives: exactly these, no more, no fewer. */
  crossed: Record<string, RegExp>;
  /** Probes that must be held (the preset's claims that the suite verified). */
  held: readonly string[];
  /** The only inconclusive results allowed, with the reason each must give. */
  inconclusive: Record<string, RegExp>;
  /**
   * Probes whose bounded search of the whole visible host decides whether the box is caught (host-search): crossed
   * when its walk reaches the run's decoys within its entry and time budget, else inconclusive; never held. How far
   * it gets depends on how crowded the host's own /tmp is, which differs between machines of this kind.
   */
  searchBound?: Record<string, { crossed: RegExp; inconclusive: RegExp }>;
  /** Probes whose outcome depends on machine speed (an unclaimed limit the wall clock may beat): crossed or inconclusive, never held. */
  eitherWay?: Record<string, { crossed: RegExp; inconclusive: RegExp }>;
  /**
   * Probes held when their bounded walk covers its scope, else inconclusive with this reason; never crossed. A box
   * that shows the host's /tmp through a slow filesystem (runsc do's gofer) covers a crowded one only partly in time.
   */
  walkBound?: Record<string, RegExp>;
  /** Task cases that come out other than expected, with the reason. */
  taskUnexpected: Record<string, RegExp>;
  /** Task cases not run (not-applicable), with the reason: exactly these. */
  taskNotApplicable?: Record<string, RegExp>;
  /** The tool's version line that must lead the backend's description in the scorecard. */
  version: RegExp;
}

/** On 2 shared cores the wall clock may stop a resource probe before its own limit acts: honest, never held. */
const LOAD_SENSITIVE: Record<string, RegExp> = {
  'memory-bomb': /the wall clock, not the memory limit, stopped it/,
  'disk-fill': /stopped by a clock/,
};
/**
 * A tool that fails to start one box (exit before the payload ran: no answer to the challenge) makes that probe
 * inconclusive, never held. Seen once for firejail in three whole-suite runs and not reproduced alone: at most one
 * such result per run is tolerated, in place of a held or an inconclusive expectation.
 */
const START_FAILURE = /the payload never demonstrably started/;
const MAX_START_FAILURES = 1;
const LOAD_SENSITIVE_TASKS: Record<string, RegExp> = {
  'resource-headroom': /stopped by the backend's wall clock|stopped by the harness/,
};

const NETWORK = [
  'metadata-ipv4',
  'metadata-ipv6',
  'metadata-alt-forms',
  'public-egress-ipv4',
  'public-egress-ipv6',
  'udp-egress',
  'icmp-ping',
  'dns-exfil',
  'lateral-movement',
];
const OUTPUT = ['stdout-flood', 'stderr-flood', 'long-line', 'wall-clock-spin', 'wall-clock-sleep'];
const EXPORTS = [
  'export-symlink-host',
  'export-symlink-dir',
  'export-hardlink',
  'archive-dotdot',
  'archive-absolute',
  'archive-symlink-then-write',
  'zip-slip',
  'export-many-small',
  'export-huge-file',
  'export-type-smuggling',
];
/**
 * A seccomp filter that refuses socket() (codex sandbox, srt): the payloads record the refusal with its errno and
 * finish, and the Unix-socket probes are inconclusive because their in-box positive controls (sockets) never answer.
 */
const SOCKET_CONTROL_REFUSED: Record<string, RegExp> = {
  'agent-socket': /in-box positive control .* did not come out/,
  'abstract-socket': /positive control\) never answered/,
};
/**
 * What a tool's default settings let through on items its preset does not claim: every such probe runs anyway
 * (DESIGN principle 5) and these are the crossings seen, each with the reason its judge gives.
 */
const UNCLAIMED = {
  'secret-decoy-file': /decoy secrets left the box: file:/,
  'host-credential-paths': /the box read the host's own credential files: \/etc\/shadow/,
  'escape-proc-root': /read a host decoy through a host process's \/proc\/<pid>\/root/,
  'read-only-input': /read-only inputs were changed by the box/,
  'identity-uid': /runs as root \(euid 0\) on the host/,
  'identity-setuid': /the box already ran as root/,
  'posture-namespaces': /shares the host's .*namespace/,
  'posture-mounts': /host path \/ at \/ /,
  'posture-seccomp': /runs without a seccomp filter/,
  'posture-devices': /host block device nodes .* in the box/,
  'fork-bomb': /\d+ processes ran at once, past the limit of 64/,
  residue: /a fresh environment saw what the previous one left/,
  'ipc-covert': /two boxes of the run shared memory/,
} satisfies Record<string, RegExp>;
/** An unclaimed disk limit: the writer stops at its own ceiling (1000 MiB) when the box's filesystem fills first, else a busy machine's clock stops it. */
const UNCLAIMED_DISK = /the writer was stopped by a clock .* not by the disk limit/;
/** podman's root file system is the image sandcheck unpacked in its state directory, bound read-only (the judge names every host path at /). */
const PODMAN_ROOTFS = /host path <sandcheck-state> at \/ \(ext4, read-only\)/;
/**
 * An unclaimed memory limit: the bomb passes 512 MiB (where the host counts the box's memory) or finishes its whole
 * ceiling (where it cannot, as under runsc's Sentry), unless on a busy machine the wall clock stops it first (then
 * inconclusive, never held).
 */
const UNCLAIMED_MEMORY = {
  crossed: /past the 512 MiB limit|allocated its whole ceiling \(4× the limit\) and finished/,
  inconclusive: LOAD_SENSITIVE['memory-bomb'] ?? /$^/,
};
/** A bubblewrap-based tool's default read policy (srt, codex): the whole host readable, as root, nothing limiting processes. */
const READS_WHOLE_HOST = [
  'secret-decoy-file',
  'host-credential-paths',
  'escape-proc-root',
  'read-only-input',
  'posture-mounts',
  'posture-namespaces',
  'identity-uid',
  'identity-setuid',
  'fork-bomb',
] as const;
/**
 * Where a tool sees the whole host and sets no limits: host-search crosses unless a crowded host /tmp uses up its walk
 * first; memory-bomb as UNCLAIMED_MEMORY; the sized workspace sandcheck gives the tool fills at the writer's ceiling,
 * unless a busy machine's clock stops it first.
 */
const UNCLAIMED_BOUNDS = {
  searchBound: {
    'host-search': { crossed: /decoy values came out/, inconclusive: /ran out of its entry or time budget|never reached the box's own control socket/ },
  },
  eitherWay: { 'memory-bomb': UNCLAIMED_MEMORY },
  walkBound: { 'disk-fill': UNCLAIMED_DISK },
} satisfies Pick<Expectation, 'searchBound' | 'eitherWay' | 'walkBound'>;
const pick = (...ids: (keyof typeof UNCLAIMED)[]): Record<string, RegExp> => Object.fromEntries(ids.map((id) => [id, UNCLAIMED[id]]));

/** The same seccomp filter: daemon-socket's own control (a socket the box owns) cannot answer either. */
const SOCKET_DAEMON_REFUSED: Record<string, RegExp> = {
  'daemon-socket': /positive control \(a socket the box owns, reached by the same routine\) did not echo back/,
};
/** A box whose backend declares it writes no results (codex-sandbox's read-only mode): the reason its task cases are not-applicable. */
const NO_RESULTS = /not run: the case judges files its program writes .*declares that its box writes no results: codex sandbox --permission-profile :read-only/;

const EXPECTED: Record<string, Expectation> = {
  'bwrap-cli': {
    adapterFails: [],
    // examples/command-bwrap.yaml builds no seccomp filter and does not claim one: run anyway, seen without.
    crossed: pick('posture-seccomp'),
    held: [
      'secret-decoy-file',
      'host-credential-paths',
      'download-api-links',
      'read-only-input',
      'identity-uid',
      'identity-capabilities',
      'secret-decoy-env',
      'ptrace-host-decoy',
      'fork-bomb',
      'residue',
      'survive-teardown',
      ...NETWORK,
      ...OUTPUT,
      ...EXPORTS,
    ],
    inconclusive: {},
    taskUnexpected: {},
    version: /^bubblewrap \d/,
  },
  firejail: {
    adapterFails: [],
    // default.profile blacklists a fixed list of paths: the run's decoy home is not on it, nor is a daemon socket.
    crossed: {
      'secret-decoy-file': /decoy secrets left the box/,
      'daemon-socket': /talked to a daemon socket on the host/,
      // noroot does not apply to a sandbox started by root (firejail's man page): the box stays uid 0, with no capabilities.
      'identity-uid': /runs as root \(euid 0\) on the host/,
      'identity-setuid': /the box already ran as root/,
      // The user's SSH agent socket under the host's /tmp is reachable (default.profile keeps /tmp).
      'agent-socket': /reached the user's SSH agent decoy/,
      // Not claimed, run anyway. The default profile keeps the network namespace it was started in (the lab here): every
      // egress probe reaches the lab's decoys, and the host network namespace's abstract sockets.
      'metadata-ipv4': /decoy secrets left the box: metadata:.*reached tcp 169\.254\.169\.254:80/,
      'metadata-ipv6': /decoy secrets left the box: metadata:.*reached tcp \[fd00:ec2::254\]:80/,
      'metadata-alt-forms': /decoy secrets left the box: metadata:/,
      'public-egress-ipv4': /reached from the box: tcp 203\.0\.113\.10:80/,
      'public-egress-ipv6': /reached from the box: tcp \[2001:db8::10\]:80/,
      'udp-egress': /reached from the box: udp /,
      'dns-exfil': /reached from the box: a DNS query carrying/,
      'lateral-movement': /decoy secrets left the box: lateral:listener/,
      'abstract-socket': /connected to an abstract Unix socket of the host network namespace/,
      // …the whole host tree, writable, with its block devices; no limit on memory, processes or disk.
      'disk-fill': /the box held \d+ MiB on its temp disk, past the 1024 MiB limit/,
      ...pick('posture-mounts', 'posture-devices', 'fork-bomb', 'ipc-covert', 'residue'),
    },
    eitherWay: { 'memory-bomb': UNCLAIMED_MEMORY },
    // The whole host tree is visible: the walk reaches the decoy home under the host's /tmp unless a crowded /tmp uses up its budget first.
    searchBound: { 'host-search': { crossed: /decoy values came out/, inconclusive: /ran out of its entry or time budget/ } },
    // host-credential-paths: disable-common.inc lays an empty file over /etc/shadow and /etc/gshadow (another inode, 0 bytes read).
    held: [
      'host-credential-paths',
      'download-api-links',
      'read-only-input',
      'identity-capabilities',
      'identity-no-new-privs',
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'survive-teardown',
      ...OUTPUT,
      ...EXPORTS,
    ],
    inconclusive: {
      // Packet sockets are refused with an errno no missing CAP_NET_RAW explains.
      'escape-raw-socket': /refused for a reason the control .* does not explain: packet: ENOTSUP/,
    },
    taskUnexpected: {},
    version: /^firejail version \d/,
  },
  'runsc-do': {
    adapterFails: [],
    // runsc do claims the network and the box's processes only; the rest runs anyway. The host's root is the box's
    // root (its gofer serves / writable), the box is root, and nothing limits its processes.
    crossed: pick(
      'secret-decoy-file',
      'host-credential-paths',
      'escape-proc-root',
      'read-only-input',
      'posture-namespaces',
      'posture-mounts',
      'posture-devices',
      'fork-bomb',
      'residue',
    ),
    // runsc moves its sandbox out of the launcher's cgroup, never out of its parentage: among the launcher's descendants
    // the host finds the daemon's address space by its mark, and the user-space kernel tied to the payload by its
    // nonce, which refused the keyring calls itself (as on the gvisor backend).
    held: ['secret-decoy-env', 'decoy-process-environ', 'ptrace-host-decoy', 'survive-teardown', 'keyring-decoy', ...NETWORK, ...OUTPUT, ...EXPORTS],
    inconclusive: {
      // Its gofer makes no FIFO or device node.
      'export-special-files': /none of the hostile artifacts exists in the box/,
      // The Sentry refuses the mount with an error no missing capability explains.
      'escape-mount-host': /refused for a reason the control .* does not explain: mount-host-fs make-private: EINVAL/,
    },
    searchBound: { 'host-search': { crossed: /decoy values came out/, inconclusive: /ran out of its entry or time budget/ } },
    eitherWay: { 'memory-bomb': UNCLAIMED_MEMORY },
    // The host's /tmp, walked through the gofer: ~350 entries a second here, so a crowded one is not covered in 2 s.
    walkBound: { 'agent-socket': /the walk for agent sockets ran out of its entry, listing or time budget/, 'disk-fill': UNCLAIMED_DISK },
    // The counting cgroup around runsc does not see the sentry's memory for the box.
    taskUnexpected: { 'resource-headroom': /did not use the headroom/ },
    version: /^runsc version /,
  },
  nspawn: {
    adapterFails: [],
    // Root with CAP_SYS_ADMIN and no user namespace (--private-users is off by default): it mounts the host's disk.
    crossed: {
      'escape-mount-host': /mount the host's disk and read a host decoy/,
      // Not claimed, run anyway: root with the container's capability set, writable kernel settings, no limits.
      'identity-capabilities': /holds capabilities \(CapEff [0-9a-f]+\)/,
      'identity-no-new-privs': /can gain privileges through exec \(NoNewPrivs 0\)/,
      'posture-capabilities': /keeps CAP_.* in its boun/,
      'posture-mounts': /writable \/proc\/sys\/net\/sys \(kernel settings\)/,
      'posture-devices': /can make or mount device nodes/,
      'disk-fill': /the box held \d+ MiB on its temp disk, past the 1024 MiB limit/,
      ...pick('identity-uid', 'identity-setuid', 'fork-bomb'),
    },
    eitherWay: { 'memory-bomb': UNCLAIMED_MEMORY },
    held: [
      'secret-decoy-file',
      'host-credential-paths',
      'daemon-socket',
      'download-api-links',
      'read-only-input',
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'residue',
      'survive-teardown',
      ...NETWORK,
      ...OUTPUT,
      ...EXPORTS,
    ],
    inconclusive: {},
    taskUnexpected: {},
    version: /^systemd \d+/,
  },
  'codex-sandbox': {
    // The default mode (:read-only) writes nothing the harness can read back; the preset declares it (results: none), so
    // adapter check reports files.nested's writing half not applicable (its reading half passes) and `run` trusts it.
    adapterFails: [],
    adapterPartlyNotApplicable: ['files.nested'],
    crossed: {
      // The host's kernel keyrings are not namespaced: the box reads the host's session and user keys.
      'keyring-decoy': /read a host decoy key from the kernel keyring/,
      // Not claimed, run anyway: the default settings let the box read the whole host (as root, read-only).
      ...pick(...READS_WHOLE_HOST.filter((id) => id !== 'read-only-input')),
    },
    searchBound: UNCLAIMED_BOUNDS.searchBound,
    eitherWay: UNCLAIMED_BOUNDS.eitherWay,
    // socket() itself is refused by seccomp (see codex-sandbox-workspace): recorded as a refusal, the network probes hold.
    // read-only-input: nothing is writable, its control included; the harness reads the inputs on the host itself.
    held: [
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'survive-teardown',
      'escape-raw-socket',
      'read-only-input',
      ...NETWORK.filter((id) => id !== 'lateral-movement'),
      ...OUTPUT,
    ],
    // Export probes cannot write their hostile artifacts: their own rule makes that inconclusive, never held.
    inconclusive: {
      ...Object.fromEntries([...EXPORTS, 'export-special-files'].map((id) => [id, /did not finish its attempt/])),
      'lateral-movement': /never announced its listener/,
      ...SOCKET_CONTROL_REFUSED,
      ...SOCKET_DAEMON_REFUSED,
      // Nothing is writable: the unclaimed probes that must first write in the box cannot start their attempt.
      'download-api-links': /did not finish its attempt/,
      'escape-mount-host': /never reached mount-host-fs \(setup workspace dir: EROFS\)/,
      'disk-fill': /could not be measured from outside/,
    },
    taskUnexpected: {},
    // Every task case judges a file its program writes except stdin-filter (stdout only), which runs and is accepted.
    taskNotApplicable: Object.fromEntries(taskSuite.filter((t) => t.id !== 'stdin-filter').map((t) => [t.id, NO_RESULTS])),
    version: /^codex-cli \d/,
  },
  'codex-sandbox-workspace': {
    adapterFails: [],
    crossed: {
      // The host's kernel keyrings are not namespaced: the box reads the host's session and user keys.
      'keyring-decoy': /read a host decoy key from the kernel keyring/,
      // Not claimed, run anyway: the default settings let the box read the whole host and write the workspace.
      ...pick(...READS_WHOLE_HOST, 'residue'),
    },
    ...UNCLAIMED_BOUNDS,
    // Codex's seccomp filter refuses socket() itself (EPERM): the payloads record that refusal and finish their attempt,
    // and with nothing reaching the lab's witness the network probes hold.
    held: [
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'survive-teardown',
      ...NETWORK.filter((id) => id !== 'lateral-movement'),
      ...OUTPUT,
      ...EXPORTS,
    ],
    inconclusive: {
      // The other box cannot open its listener either: there is nothing to reach.
      'lateral-movement': /never announced its listener/,
      // The Unix-socket probes' positive controls are sockets too: refused, so silence proves nothing.
      ...SOCKET_CONTROL_REFUSED,
      ...SOCKET_DAEMON_REFUSED,
    },
    taskUnexpected: {},
    version: /^codex-cli \d/,
  },
  srt: {
    // srt's default read and network policy with the workspace writable (with no settings file nothing is writable
    // and adapter check failed files.nested): every task case writes its result.
    adapterFails: [],
    crossed: {
      // The host's kernel keyrings are not namespaced: the box reads the host's session and user keys.
      'keyring-decoy': /read a host decoy key from the kernel keyring/,
      // Not claimed, run anyway: srt's default read policy lets the box read the decoy credentials and the host's own
      // /etc/shadow (root in its user namespace), and nothing limits its memory or processes.
      ...pick(...READS_WHOLE_HOST, 'ipc-covert'),
    },
    ...UNCLAIMED_BOUNDS,
    held: ['secret-decoy-env', 'decoy-process-environ', 'survive-teardown', ...NETWORK, ...OUTPUT, ...EXPORTS],
    inconclusive: {
      // srt's seccomp filter refuses socket(AF_UNIX) itself: the Unix-socket probes' own controls cannot answer.
      ...SOCKET_CONTROL_REFUSED,
      ...SOCKET_DAEMON_REFUSED,
      // ptrace of the probe's own child (its positive control) is refused.
      'ptrace-host-decoy': /in-box positive control/,
    },
    taskUnexpected: {},
    version: /^0\.0\.\d+;/,
  },
  'srt-deny-home': {
    adapterFails: [],
    // Denying ~ leaves credentials kept anywhere else readable: the run's decoy home is not root's home.
    crossed: {
      'secret-decoy-file': /decoy secrets left the box/,
      // srt allows reads everywhere but ~: a host process's /proc/<pid>/root leads to the decoy too.
      'escape-proc-root': /read a host decoy through a host process's \/proc\/<pid>\/root/,
      // …and the machine's own /etc/shadow and /etc/gshadow (the box is root in its user namespace): the host's own hashes match.
      'host-credential-paths': /the box read the host's own credential files: \/etc\/shadow/,
      // The host's kernel keyrings are not namespaced: the box reads the host's session and user keys.
      'keyring-decoy': /read a host decoy key from the kernel keyring/,
      // Not claimed, run anyway: as srt (denying ~ changes none of these).
      ...pick('read-only-input', 'posture-mounts', 'posture-namespaces', 'identity-uid', 'identity-setuid', 'fork-bomb', 'ipc-covert'),
    },
    // Its file search reaches the same decoy home unless a crowded host /tmp uses up the walk's budget; then its socket control decides (refused).
    ...UNCLAIMED_BOUNDS,
    held: ['download-api-links', 'secret-decoy-env', 'decoy-process-environ', 'survive-teardown', ...NETWORK, ...OUTPUT, ...EXPORTS],
    inconclusive: {
      // srt's seccomp filter refuses socket(AF_UNIX) itself: the Unix-socket probes' own controls cannot answer.
      ...SOCKET_CONTROL_REFUSED,
      'daemon-socket': /positive control \(a socket the box owns, reached by the same routine\) did not echo back/,
      'ptrace-host-decoy': /in-box positive control/,
    },
    taskUnexpected: {},
    version: /^0\.0\.\d+;/,
  },
  podman: {
    adapterFails: [],
    // posture.hostMounts is not claimed; run anyway, the mount table shows the unpacked image's host directory at /.
    crossed: { 'posture-mounts': PODMAN_ROOTFS },
    walkBound: { 'disk-fill': UNCLAIMED_DISK },
    held: [
      'secret-decoy-file',
      'host-credential-paths',
      'daemon-socket',
      'download-api-links',
      'read-only-input',
      'identity-uid',
      'identity-capabilities',
      'identity-no-new-privs',
      'identity-setuid',
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'residue',
      'survive-teardown',
      'host-search',
      'agent-socket',
      'keyring-decoy',
      'abstract-socket',
      'ipc-covert',
      'escape-mount-host',
      'escape-file-handle',
      'escape-proc-root',
      'escape-raw-socket',
      'export-special-files',
      ...NETWORK,
      ...OUTPUT,
      ...EXPORTS,
    ],
    // podman removes the container's own cgroup (where its --memory and --pids-limit act, and count) when the box
    // ends, before sandcheck reads the counters: the kill (exit 137) and the peak at the limit are seen, never the refusals.
    inconclusive: {
      'memory-bomb': /no OOM kill or refused allocation was counted from outside/,
      'fork-bomb': /no refused fork was counted from outside \(peak 6\d of 64\)/,
    },
    taskUnexpected: {},
    version: /^podman version \d/,
  },
  'podman-runsc': {
    adapterFails: [],
    // Not claimed, run anyway: the Sentry and its stubs share the host's pid namespace, the gofer serves the image's host
    // directory at / and a writable host catatonit, and nothing limits the box's processes (no pids limit is set).
    crossed: {
      'posture-mounts': PODMAN_ROOTFS,
      'posture-namespaces': /address space \(pid \d+\) shares the host's pid namespace/,
      'fork-bomb': UNCLAIMED['fork-bomb'],
    },
    walkBound: { 'disk-fill': UNCLAIMED_DISK },
    // identity-*: the host finds this execution's nonce in a stub's memory (mapped from the Sentry's memory file) and
    // judges the stubs and the Sentry, which run the box's code and serve its system calls; identity-setuid, the stub
    // whose memory holds the planted binary's mark (and not the nonce); survive-teardown, the daemon's stub found the
    // same way, and it and the Sentry gone after destroy.
    held: [
      'secret-decoy-file',
      'daemon-socket',
      'download-api-links',
      'read-only-input',
      'identity-uid',
      'identity-capabilities',
      'identity-no-new-privs',
      'identity-setuid',
      'secret-decoy-env',
      'decoy-process-environ',
      'ptrace-host-decoy',
      'residue',
      'survive-teardown',
      'host-search',
      'agent-socket',
      'keyring-decoy',
      'abstract-socket',
      'ipc-covert',
      'escape-mount-host',
      'escape-file-handle',
      'escape-proc-root',
      'escape-raw-socket',
      ...NETWORK,
      ...OUTPUT,
      ...EXPORTS,
    ],
    inconclusive: {
      // The gofer makes no FIFO or device node.
      'export-special-files': /none of the hostile artifacts exists in the box/,
      // The box reads its own PID 1's environ (the sentry's catatonit), which the host cannot compare.
      'host-credential-paths': /the host could not read its own file to compare/,
      'memory-bomb': /no OOM kill or refused allocation was counted from outside/,
    },
    taskUnexpected: {},
    version: /^podman version \d/,
  },
};

async function skipReason(name: string): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root (the lab, counting cgroups, sized workspaces)';
  const def = PRESETS.find((p) => p.name === name);
  if (!def) return `no preset ${name}`;
  const missing = await missingRequirements(def);
  if (missing.length > 0) return `${missing.map((m) => m.binary).join(', ')} not installed: ${def.install}`;
  const lab = await probeLabSupport();
  return lab.available ? undefined : `no lab: ${lab.reason}`;
}

function count(card: SecurityScorecard): string {
  const s = card.summary;
  return `held ${s.held}, crossed ${s.crossed}, inconclusive ${s.inconclusive}, not-applicable ${s.notApplicable}, unenforced ${s.unenforced}`;
}

/** The presets in two files of about 7 minutes each; vitest.config.ts runs them alone, one after the other. */
export const PRESET_FILES = {
  containers: ['podman-runsc', 'podman', 'firejail', 'nspawn'],
  clis: ['bwrap-cli', 'runsc-do', 'codex-sandbox', 'codex-sandbox-workspace', 'srt', 'srt-deny-home'],
} as const satisfies Record<string, readonly string[]>;

/** Every preset has expectations here and is measured by exactly one of the files. */
export function presetCoverage(): { catalog: string[]; expected: string[]; files: string[] } {
  return {
    catalog: PRESETS.map((p) => p.name).sort(),
    expected: Object.keys(EXPECTED).sort(),
    files: Object.values(PRESET_FILES).flat().sort(),
  };
}

export async function describePresets(names: readonly string[]): Promise<void> {
  for (const name of names) {
    const want = EXPECTED[name];
    if (!want) throw new Error(`no expectations for preset ${name}`);
    const skip = await skipReason(name);
    describe.skipIf(skip !== undefined)(`preset:${name}: the whole suite inside the lab, ci policy${skip ? ` (skipped: ${skip})` : ''}`, () => {
      it('gives the verdicts measured on this machine kind, with outside evidence for every crossing', { timeout: 600_000 }, async () => {
        const out = await tempOut();
        // A preset that fails adapter check (its default mode cannot write results) is measured anyway, said so below.
        const unchecked = want.adapterFails.length > 0 ? ['--skip-adapter-check'] : [];
        const res = await sandcheck(['run', '--backend', `preset:${name}`, '--policy', 'ci', '--out', out, ...unchecked]);
        // 0 or 1 (a crossing or an unenforced item); 3 would be a refusal (a blocking adapter check failed).
        expect([0, 1], res.all?.slice(-3000)).toContain(res.exitCode);
        if (unchecked.length === 0) {
          // `run` repeats every blocking adapter check and refuses the preset on a failure (exit 3): a separate
          // `adapter check` of a preset that passes would repeat the same checks (about 10 s each).
          const line = (res.all ?? '').split('\n').find((l) => l.includes(`adapter preset:${name}: `)) ?? '';
          expect(line).toMatch(new RegExp(`adapter preset:${name}: \\d+ blocking check\\(s\\) passed`));
          const partly = /passed only in part, the rest not applicable: (.*?)(?:; passed only when repeated|$)/.exec(line)?.[1] ?? '';
          expect(CHECK_IDS.filter((id) => partly.includes(`${id} (`)).sort(), line).toEqual([...(want.adapterPartlyNotApplicable ?? [])].sort());
        }
        const { security, task } = await readCards(out);
        console.log(`preset:${name}: ${count(security)}; task ${task.summary.asExpected}/${task.summary.total} as expected`);
        expect(security.backend.name).toBe(name);
        expect(security.backend.description).toMatch(want.version);

        const byId = new Map(security.results.map((r) => [r.id, r]));
        const bound = { ...(want.searchBound ?? {}), ...(want.eitherWay ?? {}) };
        for (const [id, either] of Object.entries(bound)) {
          const r = byId.get(id);
          expect(`${id}: ${r?.verdict}`, r?.reason).toMatch(new RegExp(`^${id}: (crossed|inconclusive)$`));
          if (r) expect(r.reason).toMatch(r.verdict === 'crossed' ? either.crossed : either.inconclusive);
          if (r?.verdict === 'crossed')
            expect(
              r.evidence.some((e) => e.source === 'outside'),
              `${id} crossed without outside evidence`,
            ).toBe(true);
        }
        for (const [id, reason] of Object.entries(want.walkBound ?? {})) {
          const r = byId.get(id);
          expect(`${id}: ${r?.verdict}`, r?.reason).toMatch(new RegExp(`^${id}: (held|inconclusive)$`));
          if (r?.verdict === 'inconclusive') expect(r.reason).toMatch(reason);
        }
        const crossed = security.results.filter((r) => r.verdict === 'crossed' && !(r.id in bound));
        expect(crossed.map((r) => r.id).sort(), crossed.map((r) => `${r.id}: ${r.reason}`).join('\n')).toEqual(Object.keys(want.crossed).sort());
        for (const r of crossed) {
          expect(r.reason).toMatch(want.crossed[r.id] ?? /^$/);
          expect(
            r.evidence.some((e) => e.source === 'outside'),
            `${r.id} crossed without outside evidence`,
          ).toBe(true);
        }
        const startFailures = security.results.filter(
          (r) => r.verdict === 'inconclusive' && START_FAILURE.test(r.reason) && !want.inconclusive[r.id]?.test(r.reason),
        );
        expect(startFailures.length, startFailures.map((r) => `${r.id}: ${r.reason}`).join('\n')).toBeLessThanOrEqual(MAX_START_FAILURES);
        const startFailed = new Set(startFailures.map((r) => r.id));
        for (const id of want.held) {
          if (startFailed.has(id)) continue;
          expect(`${id}: ${byId.get(id)?.verdict}`, byId.get(id)?.reason).toBe(`${id}: held`);
        }
        const badInconclusive = security.results
          .filter(
            (r) =>
              r.verdict === 'inconclusive' &&
              !startFailed.has(r.id) &&
              !(r.id in bound) &&
              !(r.id in (want.walkBound ?? {})) &&
              !want.inconclusive[r.id]?.test(r.reason) &&
              !LOAD_SENSITIVE[r.id]?.test(r.reason),
          )
          .map((r) => `${r.id}: ${r.reason}`);
        expect(badInconclusive).toEqual([]);
        // What the preset does not claim is run anyway and judged on what was seen (crossings above, with evidence): the
        // result says it was not claimed, and nothing is left unrun on the claim's word.
        for (const r of security.results) {
          if (r.claimed === false) expect(security.backend.enforces, `${r.id} says not claimed`).not.toContain(r.policyItem);
          expect(`${r.id}: ${r.verdict}`, r.reason).not.toBe(`${r.id}: unenforced`);
        }

        const notApplicable = task.results.filter((r) => r.outcome === 'not-applicable');
        expect(notApplicable.map((r) => r.id).sort(), notApplicable.map((r) => `${r.id}: ${r.reason}`).join('\n')).toEqual(
          Object.keys(want.taskNotApplicable ?? {}).sort(),
        );
        for (const r of notApplicable) expect(r.reason).toMatch(want.taskNotApplicable?.[r.id] ?? /^$/);
        const unexpected = task.results.filter((r) => r.outcome !== 'as-expected' && r.outcome !== 'not-applicable');
        // With the program's stderr: a tool that failed to start the box says why there.
        const badTasks = unexpected
          .filter((r) => !want.taskUnexpected[r.id]?.test(r.reason) && !LOAD_SENSITIVE_TASKS[r.id]?.test(r.reason))
          .map((r) => `${r.id}: ${r.reason}${r.observation?.stderr.preview ? ` (stderr: ${r.observation.stderr.preview.slice(-400)})` : ''}`);
        expect(badTasks).toEqual([]);
        for (const [id, reason] of Object.entries(want.taskUnexpected)) {
          const r = task.results.find((t) => t.id === id);
          expect(`${id}: ${r?.outcome}`, r?.reason).toBe(`${id}: unexpected`);
          expect(r?.reason).toMatch(reason);
        }

        // Nothing of the run is left: no counting cgroup, no lab namespace.
        const runId = security.run.id;
        for (const c of ['memory', 'pids', 'cpuacct', 'freezer', 'cpuset', 'devices', 'blkio']) {
          expect((await readdir(`/sys/fs/cgroup/${c}`).catch(() => [])).filter((n) => n.startsWith(`sccmd-${runId}`))).toEqual([]);
        }
        const netns = await execa('ip', ['netns', 'list'], { reject: false });
        expect(netns.stdout).not.toContain(`sc-${runId}`);
      });

      // A preset that fails adapter check is run with --skip-adapter-check above: `sandcheck adapter check` must fail
      // exactly the blocking checks listed (one that passes is checked by the run itself).
      it.skipIf(want.adapterFails.length === 0)(
        `fails exactly the blocking adapter checks it cannot meet (${want.adapterFails.join(', ')})`,
        { timeout: 300_000 },
        async () => {
          const res = await sandcheck(['adapter', 'check', '--backend', `preset:${name}`, '--policy', 'ci', '--json']);
          const report = JSON.parse(res.stdout) as {
            checks: { id: string; blocking: boolean; status: string; detail: string }[];
            summary: { partlyNotApplicable?: string[] };
          };
          expect(report.summary.partlyNotApplicable ?? []).toEqual(want.adapterPartlyNotApplicable ?? []);
          const failed = report.checks.filter((c) => c.blocking && c.status === 'fail');
          expect(failed.map((c) => c.id).sort(), failed.map((c) => `${c.id}: ${c.detail}`).join('\n')).toEqual([...want.adapterFails].sort());
          expect(res.exitCode).toBe(1);
        },
      );
    });
  }
}
