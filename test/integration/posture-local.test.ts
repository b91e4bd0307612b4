/**
 * Posture and kernel-identity probes on real local boxes (DESIGN principle 2: posture read from the host is
 * outside evidence). Each probe comes out crossed on the unsandboxed `process` control and on a variant that
 * opens exactly its hole, and held where the box has the control. The variants are the bubblewrap CLI through
 * the command backend (examples/command-bwrap.yaml with one change each, claiming the posture items as a
 * user's own sandbox would) and native bwrap options; nothing in backends/ is changed for them.
 *
 *   variant          what it changes                                          must cross
 *   cmd-hardened     nothing (+ posture claims)                               posture-seccomp (bwrap installs no filter)
 *   cmd-seccomp      + `--seccomp 9`, a small deny-list BPF filter on fd 9      (posture-seccomp held)
 *   cmd-shared-pid   the pid namespace (every other namespace still unshared)  posture-namespaces
 *   cmd-host-etc     + `--ro-bind /etc /hostetc`                                posture-mounts
 *   cmd-host-disk    + `--dev-bind <the host disk holding /> /dev/hostdisk`     posture-devices
 *   cmd-host-disk-opt the same at /opt/hostdisk (outside /dev)                   posture-devices
 *   bwrap-hardened   native bwrap, claiming the posture items                  posture-seccomp
 *   cmd-fake-boot-id a fake boot id bound over /proc/sys/kernel/random/boot_id,   kernel-identity (a liar: claims a separate kernel)
 *                    claiming isolation.separateKernel
 *   bwrap-host-root  host root without a user namespace (bounding set kept)     posture-capabilities, posture-devices (CAP_MKNOD)
 *   bwrap-userns-root root inside bwrap's own user namespace only               (posture-capabilities held)
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import createBwrapBackend from '../../backends/bwrap/index.js';
import createCommandBackend from '../../backends/command/index.js';
import type { Backend, PolicyItem } from '../../model/backend-contract.js';
import createProcessBackend from '../../backends/process/index.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { kernelIdentity } from '../../probes/kernel-identity/probe.js';
import { postureCapabilities } from '../../probes/posture-capabilities/probe.js';
import { postureDevices } from '../../probes/posture-devices/probe.js';
import { postureMounts } from '../../probes/posture-mounts/probe.js';
import { postureNamespaces } from '../../probes/posture-namespaces/probe.js';
import { postureSeccomp } from '../../probes/posture-seccomp/probe.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const POSTURE = [postureNamespaces, postureMounts, postureSeccomp, postureCapabilities, postureDevices];
const ALL = [...POSTURE, kernelIdentity];
const POSTURE_ITEMS: PolicyItem[] = ['posture.namespaces', 'posture.hostMounts', 'posture.seccomp', 'posture.capabilityBounding', 'posture.devices'];
/** The ci policy that also requires a separate kernel (reference and ci report it without requiring it). */
const STRICT: Policy = { ...CI_POLICY, name: 'ci+separate-kernel', isolation: { separateKernel: true } };

/** A backend that also claims the posture items (as the built-in backends are asked to), so they are judged, not gated. */
function claiming(b: Backend, items: readonly PolicyItem[] = POSTURE_ITEMS): Backend {
  return {
    name: b.name,
    description: b.description,
    capabilities: (p) => {
      const c = b.capabilities(p);
      return { ...c, enforces: [...new Set([...c.enforces, ...items])] };
    },
    preflight: () => b.preflight(),
    create: (p, ctx) => b.create(p, ctx),
  };
}

/** The host block device holding / (found at run time, never a fixed name). */
async function rootDiskNode(): Promise<string | undefined> {
  const dev = (await stat('/')).dev;
  const id = `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`;
  const name = /^DEVNAME=(.+)$/m.exec(await readFile(`/sys/dev/block/${id}/uevent`, 'utf8').catch(() => ''))?.[1];
  return name ? `/dev/${name}` : undefined;
}

/**
 * A classic BPF seccomp program (x86_64): other architectures are killed, a few escape-class system calls
 * (module loading, mount, open_by_handle_at, keyctl, bpf, unshare, setns, …) fail with EPERM, the rest run.
 */
function denyListFilter(): Buffer {
  const deny = [101, 155, 165, 166, 175, 176, 246, 248, 249, 250, 272, 298, 304, 308, 313, 321, 323];
  const n = deny.length;
  const ins: [number, number, number, number][] = [
    [0x20, 0, 0, 4], // ld [arch]
    [0x15, 0, n + 3, 0xc000003e], // jeq AUDIT_ARCH_X86_64, else kill
    [0x20, 0, 0, 0], // ld [nr]
    ...deny.map((nr, i): [number, number, number, number] => [0x15, n - i, 0, nr]),
    [0x06, 0, 0, 0x7fff0000], // allow
    [0x06, 0, 0, 0x00050001], // errno EPERM
    [0x06, 0, 0, 0x80000000], // kill process
  ];
  const b = Buffer.alloc(ins.length * 8);
  ins.forEach(([code, jt, jf, k], i) => {
    b.writeUInt16LE(code, i * 8);
    b.writeUInt8(jt, i * 8 + 2);
    b.writeUInt8(jf, i * 8 + 3);
    b.writeUInt32LE(k, i * 8 + 4);
  });
  return b;
}

interface Example {
  claims: string[];
  notClaimedReasons?: Record<string, string>;
  exec: { argv: string[] } & Record<string, unknown>;
}

const SKIP = (await bwrapSkipReason()) ?? (process.arch === 'x64' ? undefined : 'the seccomp variant is built for x86_64');
const PREFIX = `rpst${randomBytes(2).toString('hex')}`;
const temps: string[] = [];
const results = new Map<string, Map<string, SecurityResult>>();
/** The host disk the host-disk variant binds in (as a node only: nothing reads it). */
const disk = await rootDiskNode();

/** The example's bwrap command line with one change, claiming the posture items too. */
async function commandVariant(
  name: string,
  change: (argv: string[]) => string[],
  more: { wrap?: string[]; claims?: PolicyItem[]; exec?: Record<string, unknown> } = {},
): Promise<Backend> {
  const example = parseYaml(await readFile('examples/command-bwrap.yaml', 'utf8')) as Example;
  const argv = change(example.exec.argv.map((a) => (a === 'command-cgroup-limits.sh' ? 'examples/command-cgroup-limits.sh' : a)));
  const claims = [...new Set([...example.claims, ...POSTURE_ITEMS, ...(more.claims ?? [])])];
  return createCommandBackend({
    ...example,
    name: `command-bwrap-${name}`,
    claims,
    // What the variant claims is no longer among the example's reasons for not claiming.
    notClaimedReasons: Object.fromEntries(Object.entries(example.notClaimedReasons ?? {}).filter(([item]) => !claims.includes(item))),
    exec: { ...example.exec, ...more.exec, argv: [...(more.wrap ?? []), ...argv] },
  });
}
const afterArg = (flag: string, extra: string[]) => (argv: string[]) => argv.flatMap((a) => (a === flag ? [a, ...extra] : [a]));

async function run(tag: string, backend: Backend, policy: Policy, probes: readonly SecurityProbe[]): Promise<void> {
  const ctx = await openRunContext(`${PREFIX}${tag}`);
  try {
    const { security } = await new Runner({ backend, policy, probes, run: ctx, concurrency: 2 }).run();
    results.set(tag, new Map(security.map((r) => [r.id, r])));
  } finally {
    await ctx.dispose();
  }
}

function result(tag: string, id: string): SecurityResult {
  const r = results.get(tag)?.get(id);
  if (!r) throw new Error(`${id} did not run on ${tag}`);
  return r;
}

const explain = (r: SecurityResult): string =>
  `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}] ${e.detail.slice(0, 240)}`).join('\n  ')}`;

function expectVerdictReason(tag: string, id: string): string {
  expectVerdict(tag, id, 'crossed');
  return result(tag, id).reason;
}

function expectVerdict(tag: string, id: string, verdict: SecurityResult['verdict'], witness = /^host-proc-posture$/): void {
  const r = result(tag, id);
  expect(`${tag} ${id}: ${r.verdict}`, explain(r)).toBe(`${tag} ${id}: ${verdict}`);
  if (verdict === 'crossed' || verdict === 'held')
    expect(
      r.evidence.some((e) => e.source === 'outside' && witness.test(e.witness)),
      explain(r),
    ).toBe(true);
}

describe.skipIf(SKIP !== undefined)(`posture probes on the process control and bubblewrap${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sc-posture-'));
    temps.push(dir);
    const filter = join(dir, 'deny.bpf');
    await writeFile(filter, denyListFilter());
    // One run after the other: the machine has 2 cores and other tests run too.
    await run('pc', await createProcessBackend(), STRICT, ALL);
    // Claims a separate kernel it does not have: the host must catch it.
    await run('ch', await commandVariant('hardened', (a) => a, { claims: ['isolation.separateKernel'] }), STRICT, ALL);
    await run(
      'cs',
      await commandVariant('seccomp', afterArg('--unshare-all', ['--seccomp', '9']), { wrap: ['/bin/sh', '-c', 'exec 9<"$0" && exec "$@"', filter] }),
      CI_POLICY,
      [postureSeccomp],
    );
    const noPidNs = (a: string[]) =>
      a.flatMap((x) => (x === '--unshare-all' ? ['--unshare-ipc', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try'] : [x]));
    // Without a pid namespace bwrap's child-pid is the program itself (the file says so, as a user's would).
    await run('cp', await commandVariant('shared-pid', noPidNs, { exec: { status: { format: 'bwrap-json', fd: 3, childPid: 'program' } } }), CI_POLICY, [
      postureNamespaces,
    ]);
    await run('ce', await commandVariant('host-etc', afterArg('--unshare-all', ['--ro-bind', '/etc', '/hostetc'])), CI_POLICY, [postureMounts]);
    // After `--dev /dev` (which mounts a fresh /dev over anything bound there before).
    const afterDev = (extra: string[]) => (argv: string[]) => argv.flatMap((a, i) => (argv[i - 1] === '--dev' ? [a, ...extra] : [a]));
    if (disk) await run('cd', await commandVariant('host-disk', afterDev(['--dev-bind', disk, '/dev/hostdisk'])), CI_POLICY, [postureDevices]);
    // The same node outside /dev, where a scan of the box's /dev would not look: mountinfo shows it.
    if (disk) await run('co', await commandVariant('host-disk-opt', afterDev(['--dev-bind', disk, '/opt/hostdisk'])), CI_POLICY, [postureDevices]);
    // A liar: a bwrap box claiming a separate kernel that shows a fake boot id (bound over the real one).
    const fakeBoot = join(dir, 'boot_id');
    await writeFile(fakeBoot, '11111111-2222-3333-4444-555555555555\n', { mode: 0o644 });
    // bwrap binds it as the box uid: the directory must be traversable.
    await chmod(dir, 0o755);
    await run(
      'cl',
      await commandVariant(
        'fake-boot-id',
        (a) => a.flatMap((x, i) => (a[i - 1] === '--proc' ? [x, '--ro-bind', fakeBoot, '/proc/sys/kernel/random/boot_id'] : [x])),
        { claims: ['isolation.separateKernel'] },
      ),
      STRICT,
      [kernelIdentity],
    );
    // The native backend with the posture claims it is asked to make (backends/bwrap is not changed here).
    await run('bh', claiming(await createBwrapBackend()), CI_POLICY, POSTURE);
    await run('br', claiming(await createBwrapBackend({ unprivilegedUid: null, unshareUser: false })), CI_POLICY, [postureCapabilities, postureDevices]);
    await run('bu', claiming(await createBwrapBackend({ unprivilegedUid: null })), CI_POLICY, [postureCapabilities]);
  }, 400_000);

  afterAll(async () => {
    await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('the unsandboxed process control: every posture probe crossed, and the shared kernel crossed under a policy that requires a separate one', () => {
    for (const p of POSTURE) expectVerdict('pc', p.id, 'crossed');
    expectVerdict('pc', 'kernel-identity', 'crossed', /^host-kernel$/);
  });

  it('hardened bwrap (command-bwrap): own namespaces, no host path, no dangerous capability, no host disk held; no seccomp filter crossed; the shared kernel crossed when required', () => {
    for (const id of ['posture-namespaces', 'posture-mounts', 'posture-capabilities', 'posture-devices']) expectVerdict('ch', id, 'held');
    expectVerdict('ch', 'posture-seccomp', 'crossed');
    expectVerdict('ch', 'kernel-identity', 'crossed', /^host-kernel$/);
    expect(result('ch', 'kernel-identity').reason).toMatch(/host's process scan saw the payload's marked child/);
  });

  it("a box on the host kernel that shows a fake boot id and claims a separate kernel is still crossed, by the host's own witnesses", () => {
    expectVerdict('cl', 'kernel-identity', 'crossed', /^host-kernel$/);
    const r = result('cl', 'kernel-identity');
    expect(r.reason, explain(r)).not.toMatch(/boot id/);
    expect(
      r.evidence.some((e) => e.witness === 'payload-report' && /11111111-2222/.test(e.detail)),
      explain(r),
    ).toBe(true);
  });

  it('native hardened bwrap: the same verdicts as the command line, and its own seccomp deny list held', () => {
    for (const id of ['posture-namespaces', 'posture-mounts', 'posture-capabilities', 'posture-devices']) expectVerdict('bh', id, 'held');
    // The native backend passes backends/bwrap/seccomp.ts to bwrap --seccomp (the command line above has none).
    expectVerdict('bh', 'posture-seccomp', 'held');
  });

  it('each hole on a variant that opens exactly it', () => {
    expectVerdict('cs', 'posture-seccomp', 'held');
    expectVerdict('cp', 'posture-namespaces', 'crossed');
    expect(result('cp', 'posture-namespaces').reason).toMatch(/shares the host's pid namespace/);
    expectVerdict('ce', 'posture-mounts', 'crossed');
    expect(result('ce', 'posture-mounts').reason).toMatch(/host path \/etc at \/hostetc/);
    expectVerdict('br', 'posture-capabilities', 'crossed');
    expect(result('br', 'posture-capabilities').reason).toMatch(/CAP_SYS_ADMIN/);
    // Host root can make a node of any host disk (CAP_MKNOD over the host) and its device cgroup allows it.
    expect(expectVerdictReason('br', 'posture-devices')).toMatch(/CAP_MKNOD/);
    // Root inside bwrap's own user namespace holds no capability over the host.
    expectVerdict('bu', 'posture-capabilities', 'held');
  });

  it.skipIf(disk === undefined)('a host disk node bound in with devices allowed: posture-devices crossed', () => {
    expectVerdict('cd', 'posture-devices', 'crossed');
    expect(result('cd', 'posture-devices').reason).toMatch(/\/dev\/hostdisk/);
    expectVerdict('co', 'posture-devices', 'crossed');
    expect(result('co', 'posture-devices').reason).toMatch(/\/opt\/hostdisk/);
  });
});
