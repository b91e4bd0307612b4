/**
 * The exposure probes (suites/exposure.ts) on real boxes, in one lab: each crosses on the unsandboxed
 * `process` control and on a variant that opens exactly its hole, and is held on hardened bwrap, always
 * with outside evidence. Variants (no backend code changed, only its options or a command-backend file):
 * - hostDirsElsewhere (bwrap extraBinds): the run's decoy home, /run-like and /tmp-like directories bound
 *   read-only at OTHER paths (/mnt/host-home, /srv/host-run, /var/host-tmp), box still uid 65529 in its own
 *   user namespace → host-search (loose decoy files, daemon socket) and agent-socket cross.
 * - hostDirsInPlace (bwrap extraBinds): the same directories bound read-only at their own paths, box still uid 65529
 *   → secret-decoy-file and daemon-socket cross (the decoys are readable, and the socket accepts, for any uid).
 * - hostRootNoUsernsNoSeccomp (bwrap unprivilegedUid null, unshareUser false, seccomp false): the host's root in
 *   the host's user namespace, where the kernel keyring is shared, without the filter that refuses keyctl
 *   → keyring-decoy crosses.
 * - sharedNet (bwrap shareNetwork, inside the lab): the lab network namespace, where the abstract decoy
 *   listens → abstract-socket crosses.
 * - crowded (bwrap extraBinds): a tree of more entries than the agent walk's budget bound first; with nothing
 *   else agent-socket is inconclusive (a cut-short walk proves nothing), with the /tmp-like directory bound after
 *   it agent-socket still crosses (the walk is breadth-first over all roots).
 * - command-bwrap-shared-ipc (command backend): examples/command-bwrap.yaml without --unshare-ipc and with
 *   one directory of the test bound at /dev/shm for every box → ipc-covert crosses.
 */
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import createBwrapBackend, { type BwrapOptions } from '../../backends/bwrap/index.js';
import createCommandBackend from '../../backends/command/index.js';
import createProcessBackend from '../../backends/process/index.js';
import type { Backend } from '../../model/backend-contract.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { newRunId, openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, probeLabSupport, type LabSession } from '../../lab/lab-session.js';
import { exposureProbes } from '../../suites/exposure.js';
import { securitySuite } from '../../suites/index.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const SKIP = (await bwrapSkipReason()) ?? ((await probeLabSupport()).available ? undefined : 'no lab');
const ALL = exposureProbes.map((p) => p.id);
/** Which outside witness must show each probe's crossing. */
const WITNESS: Record<string, RegExp> = {
  'host-search': /^(canary-scan|decoy-socket|daemon-event-log)$/,
  'host-credential-paths': /^host-file-hash$/,
  'agent-socket': /^(decoy-socket|canary-scan)$/,
  'keyring-decoy': /^canary-scan$/,
  'abstract-socket': /^(decoy-socket|canary-scan)$/,
  'ipc-covert': /^canary-scan$/,
  'secret-decoy-file': /^canary-scan$/,
  'daemon-socket': /^decoy-socket$/,
};

let lab: LabSession | undefined;
let run: RunContext | undefined;
let shared: string | undefined;

async function runOn(backend: Backend, ids: readonly string[]): Promise<Map<string, SecurityResult>> {
  if (!run) throw new Error('no run');
  const probes = [...exposureProbes, ...securitySuite.filter((p) => !ALL.includes(p.id))].filter((p) => ids.includes(p.id));
  const { security } = await new Runner({ backend, policy: CI_POLICY, probes, run, concurrency: 2 }).run();
  console.log(security.map((r) => `${backend.name}: ${r.id} ${r.verdict}: ${r.reason.slice(0, 140)}`).join('\n'));
  return new Map(security.map((r) => [r.id, r]));
}
const explain = (r: SecurityResult | undefined): string =>
  r ? `${r.id}: ${r.verdict}: ${r.reason}\n${r.evidence.map((e) => `  ${e.source} ${e.witness}: ${e.detail.slice(0, 200)}`).join('\n')}` : 'did not run';

function expectCrossed(got: Map<string, SecurityResult>, ids: readonly string[], variant: string): void {
  for (const id of ids) {
    const r = got.get(id);
    expect(`${variant}/${id}: ${r?.verdict}`, explain(r)).toBe(`${variant}/${id}: crossed`);
    expect(
      r?.evidence.some((e) => e.source === 'outside' && WITNESS[id]?.test(e.witness)),
      explain(r),
    ).toBe(true);
  }
}

function expectHeld(got: Map<string, SecurityResult>, ids: readonly string[], variant: string): void {
  for (const id of ids) {
    const r = got.get(id);
    expect(`${variant}/${id}: ${r?.verdict}`, explain(r)).toBe(`${variant}/${id}: held`);
    expect(
      r?.evidence.some((e) => e.source === 'outside'),
      explain(r),
    ).toBe(true);
  }
}

/** examples/command-bwrap.yaml with the IPC namespace shared and one directory as every box's /dev/shm. */
async function sharedIpcConfig(dir: string, shm: string): Promise<string> {
  const example = parseYaml(await readFile(join(packageRoot(), 'examples', 'command-bwrap.yaml'), 'utf8')) as { name: string; exec: { argv: string[] } };
  const argv = example.exec.argv.flatMap((a) => {
    if (a === 'command-cgroup-limits.sh') return [join(packageRoot(), 'examples', 'command-cgroup-limits.sh')];
    // Every namespace of --unshare-all but IPC (--unshare-user is already in the file).
    if (a === '--unshare-all') return ['--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try'];
    return [a];
  });
  const dev = argv.indexOf('/dev');
  argv.splice(dev + 1, 0, '--bind', shm, '/dev/shm');
  const file = join(dir, 'command-bwrap-shared-ipc.yaml');
  await writeFile(file, JSON.stringify({ ...example, name: 'command-bwrap-shared-ipc', exec: { ...example.exec, argv } }));
  return file;
}

describe.skipIf(SKIP !== undefined)('exposure probes: process control, hardened bwrap, one weakened variant per hole', () => {
  beforeAll(async () => {
    const runId = newRunId();
    lab = await openLab(runId, packageRoot());
    run = await openRunContext(runId, { lab });
    // Binds of the decoy directories are set up by bwrap as the box uid: it must traverse the scratch dir.
    await chmod(run.scratchDir, 0o711);
    shared = await mkdtemp(join(tmpdir(), 'sc-shm-'));
    await chmod(shared, 0o711);
    await chmod(await mkdtempIn(shared), 0o1777);
  }, 120_000);

  afterAll(async () => {
    const runId = run?.runId;
    await run?.dispose();
    await lab?.close();
    if (shared) await rm(shared, { recursive: true, force: true });
    // The host as found: no decoy key of the run left in any keyring, nothing of it in /dev/shm or System V.
    if (runId) expect((await readFile('/proc/keys', 'utf8')).includes(`sandcheck-decoy:${runId}`)).toBe(false);
    expect((await readdir('/dev/shm')).filter((n) => n.startsWith('sandcheck-'))).toEqual([]);
  }, 60_000);

  it('the unsandboxed control crosses every probe; hardened bwrap holds every one', async () => {
    expectCrossed(await runOn(await createProcessBackend(), ALL), ALL, 'process');
    expectHeld(await runOn(await createBwrapBackend(), ALL), ALL, 'bwrap-hardened');
  }, 300_000);

  it('each weakened variant crosses exactly the probes of its hole', async () => {
    if (!run || !shared) throw new Error('no run');
    const bind = (src: string, dest: string) => ({ src, dest, readOnly: true });
    const variants: [string, BwrapOptions, string[]][] = [
      [
        'hostDirsElsewhere',
        {
          extraBinds: [
            bind(run.decoyDir, '/mnt/host-home'),
            bind(join(run.scratchDir, 'decoy-run'), '/srv/host-run'),
            bind(join(run.scratchDir, 'decoy-tmp'), '/var/host-tmp'),
          ],
        },
        ['host-search', 'agent-socket'],
      ],
      // Host root without the seccomp deny list (which refuses keyctl on its own).
      ['hostRootNoUsernsNoSeccomp', { unprivilegedUid: null, unshareUser: false, seccomp: false }, ['keyring-decoy']],
      ['sharedNet', { shareNetwork: true }, ['abstract-socket']],
    ];
    for (const [name, options, crossing] of variants) {
      const got = await runOn(await createBwrapBackend(options), ALL);
      expectCrossed(got, crossing, name);
      // Only its hole: the others stay held.
      expectHeld(
        got,
        ALL.filter((id) => !crossing.includes(id)),
        name,
      );
    }
    // The decoys where sandcheck keeps them, bound at their own paths into a box that is still uid 65529: readable modes
    // and an accepting daemon socket, so the probes that look there cross without any privilege.
    const inPlace = [run.decoyDir, join(run.scratchDir, 'decoy-run'), join(run.scratchDir, 'decoy-tmp')].map((d) => bind(d, d));
    const FILES = ['secret-decoy-file', 'daemon-socket'];
    const placed = await runOn(await createBwrapBackend({ extraBinds: inPlace }), [...FILES, 'keyring-decoy']);
    expectCrossed(placed, FILES, 'hostDirsInPlace');
    expectHeld(placed, ['keyring-decoy'], 'hostDirsInPlace');
    const shm = join(shared, (await readdir(shared))[0] ?? '');
    const ipc = await runOn(await createCommandBackend({ configFile: await sharedIpcConfig(shared, shm) }), ['ipc-covert', 'keyring-decoy']);
    expectCrossed(ipc, ['ipc-covert'], 'command-bwrap-shared-ipc');
    expectHeld(ipc, ['keyring-decoy'], 'command-bwrap-shared-ipc');
  }, 600_000);

  it('agent-socket: a crowded mount bound first neither earns held nor hides the host agent bound after it', async () => {
    if (!run || !shared) throw new Error('no run');
    const crowded = { src: await crowdedTree(shared), dest: '/mnt/crowded', readOnly: true };
    const alone = (await runOn(await createBwrapBackend({ extraBinds: [crowded] }), ['agent-socket'])).get('agent-socket');
    expect(`${alone?.verdict}: ${alone?.reason}`, explain(alone)).toMatch(/^inconclusive: the walk for agent sockets ran out of its entry/);
    const hostTmp = { src: join(run.scratchDir, 'decoy-tmp'), dest: '/var/host-tmp', readOnly: true };
    expectCrossed(await runOn(await createBwrapBackend({ extraBinds: [crowded, hostTmp] }), ['agent-socket']), ['agent-socket'], 'crowdedThenHostTmp');
  }, 300_000);
});

/** 30 × 30 directories of 25 empty files: more entries than the agent walk's 20,000, no listing over its 500. */
async function crowdedTree(dir: string): Promise<string> {
  const root = join(dir, 'crowded');
  for (let a = 0; a < 30; a++) {
    for (let b = 0; b < 30; b++) {
      const leaf = join(root, `d${a}`, `d${b}`);
      await mkdir(leaf, { recursive: true, mode: 0o755 });
      await Promise.all(Array.from({ length: 25 }, (_, i) => writeFile(join(leaf, `f${i}`), '')));
    }
  }
  return root;
}

async function mkdtempIn(dir: string): Promise<string> {
  return mkdtemp(join(dir, 'shm-'));
}
