/**
 * Positive controls for the bwrap backend (principle 2: every probe proves it can fail).
 *
 * Each security probe is run twice on real bubblewrap: on a deliberately weakened variant that removes
 * exactly the control the probe tests — it must come out `crossed`, with outside evidence — and on the
 * hardened default — it must come out `held`. Weakenings that the backend honestly declares (limits.*,
 * wallClock, outputCap, teardown) would make their probes not-applicable, so those variants add
 * `misdeclare: true` (the classic "limit configured but silently not applied").
 *
 * Two probes have no row:
 * - identity-no-new-privs: bwrap itself always sets PR_SET_NO_NEW_PRIVS before it runs the payload, whatever
 *   the options (even with no uid drop and no user namespace), so no bwrap variant can cross it; the test
 *   asserts it stays held on those variants. Its positive control is the `process` backend.
 * - hostile-bytes: bwrap passes box output through unchanged and says so (output.sanitized is never claimed,
 *   not even by misdeclare), so it is not-applicable on every bwrap variant; the test asserts that.
 *
 * identity-setuid crosses on noUidDrop (the planted root-owned setuid binary runs with euid 0), but no bwrap
 * variant can show the setuid bit itself raising a box uid to root: bwrap always sets NO_NEW_PRIVS, mounts
 * every bind nosuid, and in a user namespace an unmapped file owner's setuid bit is ignored.
 * cpu-quota needs a policy with fewer cpus than the host has cores (else it cannot cross, and says so):
 * its row and its hardened check run under LOW_CPU.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import createBwrapBackend, { BwrapOptionsSchema, commandArgv, DEFAULT_STATE_DIR, type BoxPlan, type BwrapOptions } from '../../backends/bwrap/index.js';
import { SECCOMP_FD } from '../../backends/bwrap/argv.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import type { Environment, GotFile } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { openRunContext, RUN_MARKER, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import { securitySuite } from '../../suites/security.js';
import { runInLab } from '../helpers/lab-run.js';

// ---------------------------------------------------------------- the variants and the pairs

interface Variant {
  /** What control it removes (shown in test names and the timing log). */
  removes: string;
  /** Two characters [a-z0-9]: the run id is <prefix><tag> (lab run ids are at most 12 characters). */
  tag: string;
  /** Options may depend on the run (its scratch directory holds the decoys). */
  options: (run: RunContext) => Promise<BwrapOptions> | BwrapOptions;
  /** Network probes: the run gets a lab of its own and the box runs inside it. */
  lab?: boolean;
  /** The export stage's exporter (export probes are enforced by the harness's exporter, not the backend). */
  exporter?: 'naive';
  /** The policy of this variant's run (CI_POLICY unless said). */
  policy?: Policy;
}

/**
 * cpus 0.1: far below the host's cores, and below the share of one task on a busy machine (a box's cgroup
 * competes with the host's tasks as one of them), so the quota can act, or be shown missing, under load.
 */
const LOW_CPU: Policy = { ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: 0.1 } };

/** The run's scratch directory, made traversable (not readable) for the box uid: some binds live under it. */
async function traversableScratch(run: RunContext): Promise<string> {
  await chmod(run.scratchDir, 0o711);
  return run.scratchDir;
}

const VARIANTS = {
  hardened: { removes: 'nothing (the hardened default)', tag: 'h0', options: () => ({}) },
  hardenedLab: { removes: 'nothing (the hardened default, in a lab)', tag: 'h1', options: () => ({}), lab: true },
  hostScratchBound: {
    removes: "host paths: the run's scratch dir (decoy files, decoy daemon socket) bound in at the same path, box as root",
    tag: 'fb',
    // The narrowest "host temp dir" bind that holds both decoys; root (in its user namespace) to pass its 0700 mode.
    options: (run) => ({ extraBinds: [{ src: run.scratchDir, dest: run.scratchDir, readOnly: true }], unprivilegedUid: null }),
  },
  naiveDownload: { removes: 'the lstat download API (getFiles follows links on the host)', tag: 'dl', options: () => ({ downloadApi: 'naive' }) },
  naiveExporter: {
    removes:
      "the reference exporter (the naive one is used); bwrap's state dir sits under the run's scratch dir so the naive exporter's host safety net lets it read the workspace",
    tag: 'nx',
    options: async (run) => ({ stateDir: join(await traversableScratch(run), 'bwrap-state') }),
    exporter: 'naive',
  },
  envLeak: { removes: "the PID-1 environment fix (bwrap launched with the controller's env, only --clearenv)", tag: 'ev', options: () => ({ envFix: 'none' }) },
  hostRootHostPid: {
    removes: 'the pid namespace, the uid drop and the user namespace (host root with CAP_SYS_PTRACE sees host processes)',
    tag: 'hp',
    options: () => ({ unsharePid: false, unprivilegedUid: null, unshareUser: false }),
  },
  noUidDrop: {
    removes: 'the uid drop (bwrap runs as root: uid 0 and capabilities in its user namespace)',
    tag: 'nu',
    options: () => ({ unprivilegedUid: null }),
  },
  noWallClock: { removes: "the backend's wall clock (misdeclared)", tag: 'wc', options: () => ({ wallClock: false, misdeclare: true }) },
  noMemoryLimit: { removes: 'the memory cgroup limit (misdeclared)', tag: 'mm', options: () => ({ limits: { memory: false }, misdeclare: true }) },
  noPidsLimit: { removes: 'the pids cgroup limit (misdeclared)', tag: 'pd', options: () => ({ limits: { pids: false }, misdeclare: true }) },
  hardenedLowCpu: { removes: 'nothing (the hardened default, policy cpus 0.1)', tag: 'h2', options: () => ({}), policy: LOW_CPU },
  noCpuLimit: {
    removes: 'the CPU quota (misdeclared; cpuacct still read), policy cpus 0.1',
    tag: 'cq',
    options: () => ({ limits: { cpu: false }, misdeclare: true }),
    policy: LOW_CPU,
  },
  hostDirWorkspace: {
    removes: 'the sized workspace filesystem: /work is a plain host directory (misdeclared)',
    tag: 'hw',
    options: () => ({ workspace: 'host-dir', misdeclare: true }),
  },
  readOnlyIgnored: {
    removes: 'read-only inputs: put like writable ones (box-owned, no read-only bind)',
    tag: 'ro',
    options: () => ({ readOnlyInputs: 'ignored' }),
  },
  sharedHostTmp: {
    removes: 'the private sized /tmp: one host directory (on the host disk, shared by every environment of the run) bound at /tmp',
    tag: 'st',
    options: async (run) => {
      const shared = join(await traversableScratch(run), 'shared-tmp');
      await mkdir(shared, { recursive: true });
      await chmod(shared, 0o1777);
      return { extraBinds: [{ src: shared, dest: '/tmp', readOnly: false }] };
    },
  },
  noOutputCap: { removes: "the backend's output cap (misdeclared)", tag: 'oc', options: () => ({ outputCap: false, misdeclare: true }) },
  launcherTreeTeardown: {
    removes: 'the cgroup, the pid namespace and the marker sweep: teardown kills only the launcher tree (misdeclared)',
    tag: 'td',
    options: () => ({ cgroups: { mode: 'off' }, unsharePid: false, teardown: 'launcher-tree', misdeclare: true }),
  },
  sharedNet: { removes: 'the network namespace (the box shares the lab netns)', tag: 'sn', options: () => ({ shareNetwork: true }), lab: true },
  noSeccomp: { removes: 'the seccomp filter (--seccomp)', tag: 'sc', options: () => ({ seccomp: false }) },
  hostRootNoSeccomp: {
    removes: 'the uid drop, the user namespace and the seccomp filter (host root may use keyctl on the keyrings it shares with the host)',
    tag: 'rs',
    options: () => ({ unprivilegedUid: null, unshareUser: false, seccomp: false }),
  },
  hostDirsElsewhere: {
    removes:
      "host paths: the decoy home, the decoy sockets' dir and the decoy temp dir bound read-only at other paths (/mnt/host-home, /srv/host-run, /var/host-tmp)",
    tag: 'he',
    options: async (run) => {
      const scratch = await traversableScratch(run);
      return {
        extraBinds: [
          { src: run.decoyDir, dest: '/mnt/host-home', readOnly: true },
          { src: join(scratch, 'decoy-run'), dest: '/srv/host-run', readOnly: true },
          { src: join(scratch, 'decoy-tmp'), dest: '/var/host-tmp', readOnly: true },
        ],
      };
    },
  },
  hostEtcHostRoot: {
    removes: "host paths and the uid drop: the host's /etc bound read-only at /etc, the box host root in the host's user namespace",
    tag: 'ee',
    options: () => ({ extraBinds: [{ src: '/etc', dest: '/etc', readOnly: true }], unprivilegedUid: null, unshareUser: false }),
  },
  sharedNetHostRoot: {
    removes: 'the network namespace, the uid drop and the user namespace (host root: CAP_NET_RAW for ICMP)',
    tag: 'sr',
    options: () => ({ shareNetwork: true, unprivilegedUid: null, unshareUser: false }),
    lab: true,
  },
} satisfies Record<string, Variant>;
type VariantName = keyof typeof VARIANTS;

/**
 * Probe id → the weakened variant that must cross it, the outside witnesses that may show it, and (when not
 * the hardened default under CI_POLICY) the variant where it must be held.
 */
const PAIRS: Record<string, { variant: VariantName; witness: RegExp; hardened?: VariantName }> = {
  // files
  'secret-decoy-file': { variant: 'hostScratchBound', witness: /^canary-scan$/ },
  'daemon-socket': { variant: 'hostScratchBound', witness: /^decoy-socket$/ },
  'download-api-links': { variant: 'naiveDownload', witness: /^canary-scan$/ },
  'read-only-input': { variant: 'readOnlyIgnored', witness: /^input-hashes$/ },
  'export-symlink-host': { variant: 'naiveExporter', witness: /^exporter$/ },
  'export-symlink-dir': { variant: 'naiveExporter', witness: /^exporter$/ },
  'export-hardlink': { variant: 'naiveExporter', witness: /^exporter$/ },
  'archive-dotdot': { variant: 'naiveExporter', witness: /^(host-files|exporter)$/ },
  'archive-absolute': { variant: 'naiveExporter', witness: /^exporter$/ },
  'archive-symlink-then-write': { variant: 'naiveExporter', witness: /^(host-files|exporter)$/ },
  'zip-slip': { variant: 'naiveExporter', witness: /^(host-files|exporter)$/ },
  'export-many-small': { variant: 'naiveExporter', witness: /^exporter$/ },
  'export-huge-file': { variant: 'naiveExporter', witness: /^exporter$/ },
  'export-type-smuggling': { variant: 'naiveExporter', witness: /^exporter$/ },
  'export-special-files': { variant: 'naiveExporter', witness: /^exporter$/ },
  // identity
  'secret-decoy-env': { variant: 'envLeak', witness: /^canary-scan$/ },
  'decoy-process-environ': { variant: 'hostRootHostPid', witness: /^canary-scan$/ },
  'ptrace-host-decoy': { variant: 'hostRootHostPid', witness: /^canary-scan$/ },
  'identity-uid': { variant: 'noUidDrop', witness: /^host-proc-status$/ },
  // Capabilities inside bwrap's own user namespace are not host capabilities: only host root without one crosses.
  'identity-capabilities': { variant: 'hostRootHostPid', witness: /^host-proc-status$/ },
  'identity-setuid': { variant: 'noUidDrop', witness: /^host-proc-status$/ },
  // resources
  'wall-clock-spin': { variant: 'noWallClock', witness: /^harness-clock$/ },
  'wall-clock-sleep': { variant: 'noWallClock', witness: /^harness-clock$/ },
  'memory-bomb': { variant: 'noMemoryLimit', witness: /^memory-peak$/ },
  'fork-bomb': { variant: 'noPidsLimit', witness: /^(cgroup|host-process-scan)$/ },
  'disk-fill': { variant: 'hostDirWorkspace', witness: /^box-disk$/ },
  'cpu-quota': { variant: 'noCpuLimit', witness: /^cgroup$/, hardened: 'hardenedLowCpu' },
  'stdout-flood': { variant: 'noOutputCap', witness: /^output-capture$/ },
  'stderr-flood': { variant: 'noOutputCap', witness: /^output-capture$/ },
  'long-line': { variant: 'noOutputCap', witness: /^output-capture$/ },
  // network (inside a lab of the run's own)
  'metadata-ipv4': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  'metadata-ipv6': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  'metadata-alt-forms': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  'public-egress-ipv4': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  'public-egress-ipv6': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  'udp-egress': { variant: 'sharedNet', witness: /^(packet-witness|decoy:.*)$/ },
  // A shared netns alone is not enough for ICMP: the lab's ping_group_range is "1 0" and a box in its own user
  // namespace has no CAP_NET_RAW in the lab netns, so the echo needs host root too.
  'icmp-ping': { variant: 'sharedNetHostRoot', witness: /^packet-witness$/ },
  'dns-exfil': { variant: 'sharedNet', witness: /^decoy:dns$/ },
  'abstract-socket': { variant: 'sharedNet', witness: /^(decoy-socket|canary-scan)$/ },
  // Both environments share the lab netns, so the box reaches its sibling's listener on loopback.
  'lateral-movement': { variant: 'sharedNet', witness: /^canary-scan$/ },
  // posture, read from the host
  'posture-namespaces': { variant: 'hostRootHostPid', witness: /^host-proc-posture$/ },
  'posture-capabilities': { variant: 'hostRootHostPid', witness: /^host-proc-posture$/ },
  'posture-devices': { variant: 'hostRootHostPid', witness: /^host-proc-posture$/ },
  'posture-mounts': { variant: 'hostScratchBound', witness: /^host-proc-posture$/ },
  'posture-seccomp': { variant: 'noSeccomp', witness: /^host-proc-posture$/ },
  // exposure
  'host-search': { variant: 'hostDirsElsewhere', witness: /^(canary-scan|decoy-socket)$/ },
  'agent-socket': { variant: 'hostDirsElsewhere', witness: /^(decoy-socket|canary-scan)$/ },
  'host-credential-paths': { variant: 'hostEtcHostRoot', witness: /^host-file-hash$/ },
  'keyring-decoy': { variant: 'hostRootNoSeccomp', witness: /^canary-scan$/ },
  // lifecycle
  'survive-teardown': { variant: 'launcherTreeTeardown', witness: /^host-process-scan$/ },
  residue: { variant: 'sharedHostTmp', witness: /^fresh-environment-output$/ },
};

/** Probes with no weakened row (see the header), and the variants that must still show them held / not-applicable. */
const NO_ROW = {
  'identity-no-new-privs': ['hardened', 'noUidDrop', 'hostRootHostPid'],
  'hostile-bytes': ['hardened', 'noOutputCap'],
  // Crossed by a bwrap command line without --unshare-ipc (test/integration/exposure-bwrap.test.ts): native bwrap has no IPC option.
  'ipc-covert': ['hardened'],
  // Not required by ci: not-applicable with the fact; required and crossed in test/integration/posture-local.test.ts.
  'kernel-identity': ['hardened'],
  // Each crossed by a bwrap command line granting exactly its power (test/integration/escapes-local.test.ts).
  'escape-mount-host': ['hardened'],
  'escape-file-handle': ['hardened'],
  'escape-proc-root': ['hardened'],
  'escape-mknod-disk': ['hardened'],
  'escape-kernel-module': ['hardened'],
  'escape-raw-socket': ['hardenedLab'],
  // Each crossed by a bwrap with exactly its control removed, and held on the hardened default, in test/integration/agent-write-scope.test.ts.
  'write-outside-scope': ['hardened'],
  'write-protected-path': ['hardened'],
  // Not asked by ci (not-applicable on hardened bwrap); crossed with denyReadPaths off and misdeclare, held on the
  // hardened default under the agent policy, in test/integration/agent-deny-read.test.ts.
  'read-denied-path': ['hardened'],
} satisfies Record<string, VariantName[]>;

// ---------------------------------------------------------------- running them

const SKIP = await bwrapSkipReason();
const PREFIX = `rbwk${randomBytes(3).toString('hex')}`;
const runIdOf = (v: VariantName): string => `${PREFIX}${VARIANTS[v].tag}`;
/** Every run id this file used: the leftover check looks for each. */
const usedRunIds = new Set<string>();
const byId = new Map(securitySuite.map((p) => [p.id, p]));

/** Which probes each variant runs: its rows, plus the hardened runs and the no-row checks. */
function probesFor(v: VariantName): SecurityProbe[] {
  const ids = new Set<string>();
  const variant: Variant = VARIANTS[v];
  if (v === 'hardened' || v === 'hardenedLab') {
    for (const p of securitySuite) if ((p.category === 'network') === (v === 'hardenedLab') && PAIRS[p.id]?.hardened === undefined) ids.add(p.id);
  }
  for (const [id, pair] of Object.entries(PAIRS)) if (pair.variant === v || pair.hardened === v) ids.add(id);
  for (const [id, variants] of Object.entries(NO_ROW)) if ((variants as string[]).includes(v)) ids.add(id);
  const probes = [...ids].map((id) => byId.get(id)).filter((p): p is SecurityProbe => p !== undefined);
  for (const p of probes) expect(p.category === 'network', `${p.id} on ${v}: network probes run only in a lab`).toBe(variant.lab === true);
  return probes;
}

const results = new Map<VariantName, Map<string, SecurityResult>>();
const failures = new Map<VariantName, string>();
const timings: string[] = [];

async function runVariant(name: VariantName): Promise<void> {
  const v: Variant = VARIANTS[name];
  const probes = probesFor(name);
  usedRunIds.add(runIdOf(name));
  const t0 = performance.now();
  let security: SecurityResult[];
  if (v.lab) {
    // runInLab opens the run (and its lab) itself: lab variants' options never depend on the run.
    const backend = await createBwrapBackend(await v.options(undefined as unknown as RunContext));
    security = (await runInLab(runIdOf(name), backend, CI_POLICY, probes)).security;
  } else {
    const run = await openRunContext(runIdOf(name));
    try {
      const backend = await createBwrapBackend(await v.options(run));
      security = (
        await new Runner({ backend, policy: v.policy ?? CI_POLICY, probes, run, concurrency: 3, ...(v.exporter ? { exporter: v.exporter } : {}) }).run()
      ).security;
    } finally {
      await run.dispose();
    }
  }
  results.set(name, new Map(security.map((r) => [r.id, r])));
  timings.push(`${name}: ${probes.length} probe(s) in ${Math.round(performance.now() - t0)} ms`);
}

function resultOf(v: VariantName, id: string): SecurityResult {
  const failed = failures.get(v);
  if (failed) throw new Error(`the ${v} run failed: ${failed}`);
  const r = results.get(v)?.get(id);
  if (!r) throw new Error(`${id} did not run on ${v}`);
  return r;
}

const explain = (r: SecurityResult): string =>
  `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 200)}`).join('\n  ')}`;

// ---------------------------------------------------------------- leftovers of this file's runs

async function cgroupsOfPrefix(): Promise<string[]> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2] === 'cgroup' || f[2] === 'cgroup2')
    .map((f) => f[1] ?? '');
  const out: string[] = [];
  for (const m of new Set(mounts)) for (const e of await readdir(m).catch(() => [] as string[])) if (e.startsWith(`sandcheck-${PREFIX}`)) out.push(join(m, e));
  return out;
}

async function leftovers(): Promise<string[]> {
  const left: string[] = [];
  left.push(...(await cgroupsOfPrefix()).map((c) => `cgroup ${c}`));
  const mounts = (await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => l.startsWith(`sandcheck-${PREFIX}`) || l.includes(`/${PREFIX}`));
  left.push(...mounts.map((m) => `mount ${m.split(' ').slice(0, 2).join(' ')}`));
  left.push(...(await readdir(DEFAULT_STATE_DIR).catch(() => [] as string[])).filter((e) => e.startsWith(PREFIX)).map((e) => `workspace ${e}`));
  for (const runId of usedRunIds) {
    // Box processes, survivors and the host decoy process all carry the run marker.
    for (const p of await findProcessesWithEnvMarker(RUN_MARKER, runId)) left.push(`process ${p.pid} of ${runId}: ${p.command.slice(0, 80)}`);
  }
  const netns = await execa('ip', ['netns', 'list'], { reject: false });
  left.push(
    ...netns.stdout
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '')
      .filter((n) => n.startsWith(`sc-${PREFIX}`))
      .map((n) => `netns ${n}`),
  );
  left.push(...(await readdir(tmpdir()).catch(() => [] as string[])).filter((e) => e.startsWith(`sandcheck-${PREFIX}`)).map((e) => `scratch ${e}`));
  return left;
}

// ---------------------------------------------------------------- tests

describe(`bwrap weakened variants: every security probe crossed on a variant without its control, held on the hardened default${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    if (SKIP) return;
    // One Runner run per variant (rows sharing a variant share it), one after the other: on 2 cores the
    // timing-sensitive probes (wall clock, fork bomb) stay clean, and the whole file takes about a minute.
    for (const name of Object.keys(VARIANTS) as VariantName[]) {
      try {
        await runVariant(name);
      } catch (err) {
        failures.set(name, err instanceof Error ? (err.stack ?? err.message) : String(err));
      }
    }
  }, 280_000);

  afterAll(() => {
    if (timings.length > 0) console.log(`bwrap weakened variants (this machine):\n  ${timings.join('\n  ')}`);
  });

  it('the table covers every probe of the security suite (except the two explained in the header) and nothing else', () => {
    const covered = new Set([...Object.keys(PAIRS), ...Object.keys(NO_ROW)]);
    expect(securitySuite.map((p) => p.id).filter((id) => !covered.has(id))).toEqual([]);
    expect([...covered].filter((id) => !byId.has(id))).toEqual([]);
  });

  const rows = Object.entries(PAIRS).map(([id, pair]) => ({ id, ...pair }));
  it.skipIf(SKIP !== undefined).each(rows)(
    '$id: crossed on $variant (with outside evidence), held on the hardened default',
    ({ id, variant, witness, hardened: heldOn }) => {
      const weak = resultOf(variant, id);
      expect(weak.verdict, explain(weak)).toBe('crossed');
      const outside = weak.evidence.filter((e) => e.source === 'outside');
      expect(
        outside.some((e) => witness.test(e.witness)),
        `${explain(weak)}\n  wanted an outside witness matching ${witness}`,
      ).toBe(true);
      const hardened = resultOf(heldOn ?? (byId.get(id)?.category === 'network' ? 'hardenedLab' : 'hardened'), id);
      expect(hardened.verdict, explain(hardened)).toBe('held');
    },
  );

  it.skipIf(SKIP !== undefined)('identity-no-new-privs stays held everywhere: bwrap always sets NoNewPrivs, even as root without a user namespace', () => {
    for (const v of NO_ROW['identity-no-new-privs'] as VariantName[]) {
      const r = resultOf(v, 'identity-no-new-privs');
      expect(r.verdict, `${v}: ${explain(r)}`).toBe('held');
      expect(
        r.evidence.some((e) => e.source === 'outside' && e.witness === 'host-proc-status' && /NoNewPrivs 1/.test(e.detail)),
        v,
      ).toBe(true);
    }
    // The variants really were root: the same runs crossed identity-uid / ptrace.
    expect(resultOf('noUidDrop', 'identity-uid').verdict).toBe('crossed');
    expect(resultOf('hostRootHostPid', 'ptrace-host-decoy').verdict).toBe('crossed');
  });

  it.skipIf(SKIP !== undefined)('hostile-bytes is not-applicable on bwrap (output passes through unchanged), even when it misdeclares', () => {
    for (const v of NO_ROW['hostile-bytes'] as VariantName[]) {
      const r = resultOf(v, 'hostile-bytes');
      expect(r.verdict, `${v}: ${explain(r)}`).toBe('not-applicable');
      expect(r.reason).toMatch(/unchanged/);
    }
  });

  it.skipIf(SKIP !== undefined)('kernel-identity is not-applicable under ci on bwrap, which says why: its boxes share the host kernel', () => {
    for (const v of NO_ROW['kernel-identity'] as VariantName[]) {
      const r = resultOf(v, 'kernel-identity');
      expect(r.verdict, `${v}: ${explain(r)}`).toBe('not-applicable');
      expect(r.reason).toMatch(/not required by policy ci.*bubblewrap boxes run on the host kernel/);
    }
  });

  it.skipIf(SKIP !== undefined)('every variant ran to its end', () => {
    expect([...failures.entries()].map(([v, err]) => `${v}: ${err}`)).toEqual([]);
  });
});

describe('bwrap weakening options: declared honestly, except by misdeclare', () => {
  it('the hardened defaults are unchanged and the new options default to the fix', () => {
    expect(BwrapOptionsSchema.parse({})).toMatchObject({
      extraBinds: [],
      shareNetwork: false,
      limits: { memory: true, pids: true, cpu: true },
      envFix: 'empty-launcher-env',
      unsharePid: true,
      unshareUser: true,
      seccomp: true,
      wallClock: true,
      outputCap: true,
      teardown: 'thorough',
      downloadApi: 'lstat',
      readOnlyInputs: 'enforced',
      misdeclare: false,
    });
    // Combinations that cannot do what they say are refused before anything runs.
    expect(BwrapOptionsSchema.safeParse({ teardown: 'launcher-tree' }).success).toBe(false);
    expect(BwrapOptionsSchema.safeParse({ unshareUser: false }).success).toBe(false);
    expect(BwrapOptionsSchema.safeParse({ unshareUser: false, unprivilegedUid: null }).success).toBe(true);
    const described = BwrapOptionsSchema.shape.misdeclare.description ?? '';
    expect(described).toMatch(/DELIBERATELY BROKEN/);
    expect(described).toMatch(/never for real use/);
  });

  it('wallClock, outputCap, teardown and cgroups off are declared not enforced; misdeclare claims them all (never output.sanitized or an allowlist)', async () => {
    const honest = (
      await createBwrapBackend({ wallClock: false, outputCap: false, teardown: 'launcher-tree', cgroups: { mode: 'off' }, workspace: 'host-dir' })
    ).capabilities(CI_POLICY);
    for (const item of [
      'resources.wallSeconds',
      'output.maxBytes',
      'lifecycle.destroyAfter',
      'resources.memoryMb',
      'resources.processes',
      'resources.cpus',
      'resources.diskMb',
    ] as const) {
      expect(honest.enforces, item).not.toContain(item);
      expect(honest.notEnforcedReasons?.[item], item).toBeTruthy();
    }
    const lying = await createBwrapBackend({
      wallClock: false,
      outputCap: false,
      teardown: 'launcher-tree',
      cgroups: { mode: 'off' },
      workspace: 'host-dir',
      misdeclare: true,
    });
    expect(lying.description).toMatch(/MISDECLARED/);
    const caps = lying.capabilities(CI_POLICY);
    // What bwrap has no code for is never claimed: sanitized output, its own kernel.
    expect(Object.keys(caps.notEnforcedReasons ?? {}).sort()).toEqual(['isolation.separateKernel', 'output.sanitized']);
    const allowlist: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['203.0.113.10:443'] } };
    expect(lying.capabilities(allowlist).enforces).not.toContain('network.egress');
  });

  it('unshareUser: false drops the user namespace (and --unshare-all, which would try one) but keeps the other unshares', () => {
    const plan: BoxPlan = {
      tools: { sh: '/bin/sh', bwrap: '/usr/bin/bwrap', setpriv: '/usr/bin/setpriv', nsenter: '/usr/bin/nsenter' },
      uid: undefined,
      unsharePid: true,
      unshareUser: false,
      shareNetwork: false,
      netnsPath: undefined,
      resolvConf: undefined,
      workHost: '/run/sandcheck/bwrap/r1-00000000/fs/work',
      tmpHost: undefined,
      tmpSizeBytes: 1024,
      readOnlyFiles: [],
      extraBinds: [],
      cwd: '',
      env: [],
      argv: ['true'],
      statusFd: 3,
    };
    const a = commandArgv(plan);
    for (const f of ['--unshare-all', '--unshare-user', '--disable-userns']) expect(a, f).not.toContain(f);
    for (const f of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net']) expect(a, f).toContain(f);
    expect(commandArgv({ ...plan, unshareUser: undefined })).toContain('--unshare-all');
    // The seccomp filter is read from the fd the launcher opened, before the program's `--`.
    const sec = commandArgv({ ...plan, seccomp: true });
    expect(sec.slice(sec.indexOf('--seccomp'), sec.indexOf('--seccomp') + 2)).toEqual(['--seccomp', String(SECCOMP_FD)]);
    expect(sec.indexOf('--seccomp')).toBeLessThan(sec.lastIndexOf('--'));
    expect(commandArgv(plan)).not.toContain('--seccomp');
  });

  it('seccomp: false is a weakening that keeps claiming posture.seccomp (so posture-seccomp must catch it) and says so', async () => {
    const weak = await createBwrapBackend({ seccomp: false });
    expect(weak.description).toMatch(/no seccomp filter/);
    expect(weak.capabilities(CI_POLICY).enforces).toContain('posture.seccomp');
    expect((await createBwrapBackend()).description).not.toMatch(/no seccomp filter/);
  });
});

describe(`bwrap download API: every kind reported, nothing followed${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it.skipIf(SKIP !== undefined)(
    'getFiles classifies with lstat: file, hardlink, symlink (with its target), fifo, socket, device, directory, missing; the naive variant reads through links',
    async () => {
      const secret = await mkdtemp(join(tmpdir(), `sandcheck-${PREFIX}dl-`));
      const canary = `SCNRYDL${randomBytes(6).toString('hex')}`;
      try {
        await execa('sh', ['-c', `printf %s "$1" > "$2"`, 'sh', canary, join(secret, 'credentials')]);
        const code = `
import os, socket, sys
secret = sys.argv[1]
open("plain.txt", "w").write("plain")
open("big.bin", "wb").write(b"x" * 4096)
open("twice.txt", "w").write("twice")
os.link("twice.txt", "twice-link.txt")
os.symlink(secret + "/credentials", "to-host")
os.symlink("/tmp", "dir-link")
os.mkfifo("pipe")
s = socket.socket(socket.AF_UNIX); s.bind("sock")
os.mkdir("sub")
print("made")
`;
        const got = async (options: BwrapOptions): Promise<{ files: Map<string, GotFile>; hostWorkspace: string | undefined }> => {
          const backend = await createBwrapBackend(options);
          const runId = `${PREFIX}g${options.downloadApi === 'naive' ? 'n' : 'l'}`;
          usedRunIds.add(runId);
          const run = await openRunContext(runId);
          let env: Environment | undefined;
          try {
            env = await backend.create(CI_POLICY, { runId: run.runId, controllerEnv: {}, scratchDir: run.scratchDir });
            const out: Buffer[] = [];
            const r = await env.exec({
              argv: ['python3', '-c', code, secret],
              timeoutMs: 10_000,
              maxOutputBytes: 65_536,
              stdout: { write: (c) => out.push(Buffer.from(c)) },
              stderr: { write: () => undefined },
              signal: new AbortController().signal,
            });
            expect(r.exitCode, Buffer.concat(out).toString()).toBe(0);
            // A device node needs CAP_MKNOD, which no box has: the host makes one (the tmpfs is nodev anyway).
            const hostWorkspace = env.hostWorkspace;
            if (hostWorkspace) await execa('mknod', [join(hostWorkspace, 'null-dev'), 'c', '1', '3']);
            const paths = [
              'plain.txt',
              'big.bin',
              'twice.txt',
              'to-host',
              'dir-link/x',
              'pipe',
              'sock',
              'null-dev',
              'sub',
              'missing',
              '../escape',
              '/etc/passwd',
            ];
            const files = await env.getFiles(paths, { maxBytesPerFile: 1024 });
            return { files: new Map(files.map((f) => [f.path, f])), hostWorkspace };
          } finally {
            if (env) expect((await env.destroy()).items).toEqual([]);
            await run.dispose();
          }
        };
        const { files: g, hostWorkspace } = await got({});
        expect(hostWorkspace).toMatch(/\/fs\/work$/);
        expect(Buffer.from(g.get('plain.txt')?.content ?? []).toString()).toBe('plain');
        expect(g.get('plain.txt')).toMatchObject({ kind: 'file', size: 5, nlink: 1 });
        expect(g.get('big.bin')).toMatchObject({ kind: 'file', size: 4096 });
        expect(g.get('big.bin')?.content).toBeUndefined();
        expect(g.get('twice.txt')).toMatchObject({ kind: 'hardlink', nlink: 2 });
        expect(g.get('to-host')).toMatchObject({ kind: 'symlink', linkTarget: join(secret, 'credentials') });
        expect(g.get('dir-link/x')).toMatchObject({ kind: 'symlink' });
        expect(g.get('pipe')).toMatchObject({ kind: 'fifo' });
        expect(g.get('sock')).toMatchObject({ kind: 'socket' });
        expect(g.get('null-dev')).toMatchObject({ kind: 'device' });
        expect(g.get('sub')).toMatchObject({ kind: 'directory' });
        expect(g.get('missing')).toMatchObject({ kind: 'missing' });
        expect(g.get('../escape')).toMatchObject({ kind: 'other' });
        expect(g.get('/etc/passwd')).toMatchObject({ kind: 'other' });
        for (const f of g.values()) if (f.path !== 'plain.txt') expect(f.content, f.path).toBeUndefined();
        for (const f of g.values()) expect(f.note === undefined || f.note.length > 0, f.path).toBe(true);

        // The deliberately naive download API: the symlink is read on the host, the hardlink's bytes handed over.
        const { files: n } = await got({ downloadApi: 'naive' });
        expect(Buffer.from(n.get('to-host')?.content ?? []).toString()).toBe(canary);
        expect(Buffer.from(n.get('twice.txt')?.content ?? []).toString()).toBe('twice');
      } finally {
        await rm(secret, { recursive: true, force: true });
      }
    },
  );
});

describe(`cleanup${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it.skipIf(SKIP !== undefined)("nothing of this file's runs remains: no cgroup, mount, workspace, process, lab namespace or scratch directory", async () => {
    expect(usedRunIds.size).toBeGreaterThan(Object.keys(VARIANTS).length);
    expect(await leftovers()).toEqual([]);
  });
});
