/**
 * Posture and kernel-identity probes on Docker (runc) and gVisor: one lab, one private dockerd inside it,
 * every configuration on that daemon. Weakened configurations are examples/docker-hardened.yaml with one
 * setting changed, declaring the hardened claims (what a team would still believe), so their probes run:
 *
 *   configuration      setting                                                must cross
 *   privileged         HostConfig.Privileged (as the non-root user 65529)       posture-seccomp, -capabilities, -devices
 *   seccomp-unconfined SecurityOpt seccomp=unconfined                           posture-seccomp
 *   cap-sys-admin      CapAdd SYS_ADMIN                                         posture-capabilities
 *   host-pid-ipc       PidMode host, IpcMode host                               posture-namespaces
 *   host-paths         Binds /etc:/host-etc:ro and the daemon's socket          posture-mounts
 *   host-disk          Devices: the host disk holding / at /dev/hostdisk (r)    posture-devices
 *
 * docker-hardened holds every posture probe; it shares the host's kernel, which the ci policy reports
 * (not-applicable) and a policy requiring a separate kernel crosses. gVisor: the host sees only the
 * runsc sandbox, never the payload's program, so the posture probes are inconclusive (never held on the
 * sandbox's own posture) and a required separate kernel is held on outside evidence.
 */
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import createDockerBackend, {
  capabilitiesFor,
  createContainerConfigBackend,
  DEFAULT_LAB_DAEMON_ROOT,
  PROFILES,
  startLabDaemon,
  type DockerBackend,
  type LabDaemon,
  type ProfileName,
} from '../../backends/docker/index.js';
import type { Backend, PolicyItem } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';
import { kernelIdentity } from '../../probes/kernel-identity/probe.js';
import { postureCapabilities } from '../../probes/posture-capabilities/probe.js';
import { postureDevices } from '../../probes/posture-devices/probe.js';
import { postureMounts } from '../../probes/posture-mounts/probe.js';
import { postureNamespaces } from '../../probes/posture-namespaces/probe.js';
import { postureSeccomp } from '../../probes/posture-seccomp/probe.js';
import { findBinary } from '../../core/find-binary.js';
import { dockerLabSkipReason } from '../helpers/docker.js';

/** The host block device holding / (found at run time, never a fixed name). */
async function rootDiskNode(): Promise<string | undefined> {
  const dev = (await stat('/')).dev;
  const id = `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`;
  const name = /^DEVNAME=(.+)$/m.exec(await readFile(`/sys/dev/block/${id}/uevent`, 'utf8').catch(() => ''))?.[1];
  return name ? `/dev/${name}` : undefined;
}

const SKIP = await dockerLabSkipReason();
const HAVE_RUNSC = (await findBinary('runsc')) !== undefined;
const DISK = await rootDiskNode();
const runId = `rpd${randomBytes(4).toString('hex')}`;
const POSTURE: SecurityProbe[] = [postureNamespaces, postureMounts, postureSeccomp, postureCapabilities, postureDevices];
const STRICT: Policy = { ...CI_POLICY, name: 'ci+separate-kernel', isolation: { separateKernel: true } };
const HARDENED_FILE = parseYaml(await readFile(join(packageRoot(), 'examples', 'docker-hardened.yaml'), 'utf8')) as {
  Config: Record<string, unknown>;
  HostConfig: Record<string, unknown>;
};
const HARDENED_CLAIMS = capabilitiesFor(PROFILES['docker-hardened'], CI_POLICY, { inLab: true, endpoint: 'unix:///lab' }, false).enforces;

let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;
const results = new Map<string, Map<string, SecurityResult>>();

async function runOn(tag: string, backend: Backend, probes: readonly SecurityProbe[], policy: Policy = CI_POLICY): Promise<void> {
  if (!run) throw new Error('no run');
  const { security } = await new Runner({ backend, policy, probes, run, concurrency: 2 }).run();
  const got = results.get(tag) ?? new Map<string, SecurityResult>();
  for (const r of security) got.set(`${r.id}${policy === STRICT ? '@strict' : ''}`, r);
  results.set(tag, got);
}

function profile(name: ProfileName): Promise<DockerBackend> {
  if (!daemon) throw new Error('no lab daemon');
  return createDockerBackend({ profile: name, socketPath: daemon.socketPath, labNetnsPath: daemon.netnsPath, runId });
}

/** The hardened file with some settings changed, declaring the hardened claims. */
function weakened(name: string, host: Record<string, unknown>, moreClaims: readonly PolicyItem[] = []): Promise<DockerBackend> {
  if (!daemon) throw new Error('no lab daemon');
  return createContainerConfigBackend({
    ...HARDENED_FILE,
    name,
    claims: [...HARDENED_CLAIMS, ...moreClaims],
    HostConfig: { ...HARDENED_FILE.HostConfig, ...host },
    socketPath: daemon.socketPath,
    labNetnsPath: daemon.netnsPath,
    runId,
  });
}

const explain = (r: SecurityResult | undefined): string =>
  r ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}] ${e.detail.slice(0, 240)}`).join('\n  ')}` : 'did not run';

function expectVerdict(tag: string, key: string, verdict: SecurityResult['verdict'], witness = /^host-proc-posture$/): SecurityResult {
  const r = results.get(tag)?.get(key);
  expect(`${tag} ${key}: ${r?.verdict}`, explain(r)).toBe(`${tag} ${key}: ${verdict}`);
  if (verdict === 'crossed' || verdict === 'held')
    expect(
      r?.evidence.some((e) => e.source === 'outside' && witness.test(e.witness)),
      explain(r),
    ).toBe(true);
  if (!r) throw new Error(`${key} did not run on ${tag}`);
  return r;
}

describe.skipIf(SKIP !== undefined)(`posture probes on Docker and gVisor${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    lab = await openLab(runId, packageRoot());
    daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: join(DEFAULT_LAB_DAEMON_ROOT, runId) });
    run = await openRunContext(runId, { lab });
    const hardened = await profile('docker-hardened');
    await hardened.preflight();
    await runOn('hardened', hardened, [...POSTURE, kernelIdentity]);
    await runOn('hardened', hardened, [kernelIdentity], STRICT);
    // A team that believes runc brings its own kernel: the claim is measured, and caught from outside.
    await runOn('claims-kernel', await weakened('claims-kernel', {}, ['isolation.separateKernel']), [kernelIdentity], STRICT);
    if (HAVE_RUNSC) {
      const gvisor = await profile('gvisor');
      await runOn('gvisor', gvisor, POSTURE);
      await runOn('gvisor', gvisor, [kernelIdentity], STRICT);
    }
    await runOn('privileged', await weakened('privileged', { Privileged: true }), [postureSeccomp, postureCapabilities, postureDevices]);
    await runOn('seccomp-unconfined', await weakened('seccomp-unconfined', { SecurityOpt: ['no-new-privileges', 'seccomp=unconfined'] }), [postureSeccomp]);
    await runOn('cap-sys-admin', await weakened('cap-sys-admin', { CapAdd: ['SYS_ADMIN'] }), [postureCapabilities]);
    await runOn('host-pid-ipc', await weakened('host-pid-ipc', { PidMode: 'host', IpcMode: 'host' }), [postureNamespaces]);
    await runOn('host-paths', await weakened('host-paths', { Binds: ['/etc:/host-etc:ro', `${daemon.socketPath}:/var/run/docker.sock`] }), [postureMounts]);
    if (DISK)
      await runOn('host-disk', await weakened('host-disk', { Devices: [{ PathOnHost: DISK, PathInContainer: '/dev/hostdisk', CgroupPermissions: 'r' }] }), [
        postureDevices,
      ]);
  }, 600_000);

  afterAll(async () => {
    await run?.dispose().catch(() => undefined);
    const stopped = await daemon?.stop();
    await lab?.close().catch(() => undefined);
    expect(stopped?.leftovers ?? []).toEqual([]);
  }, 60_000);

  it('docker-hardened: every posture probe held; it declares the shared kernel (not-applicable under ci; when required, run anyway: crossed — not claimed), and a claim of a separate kernel is crossed', () => {
    for (const p of POSTURE) expectVerdict('hardened', p.id, 'held');
    expect(expectVerdict('hardened', 'kernel-identity', 'not-applicable').reason).toMatch(/runc containers run on the host kernel/);
    expect(expectVerdict('hardened', 'kernel-identity@strict', 'crossed', /^host-kernel$/).claimed).toBe(false);
    expectVerdict('claims-kernel', 'kernel-identity@strict', 'crossed', /^host-kernel$/);
  });

  it.skipIf(!HAVE_RUNSC)(
    "gVisor: posture judged on runsc's stubs, Sentry and gofer (the nonce found in a stub's memory), a required separate kernel held from outside",
    () => {
      const lead =
        /^the box's program runs on a user-space kernel, gVisor \(runsc\) \(this execution's nonce in host pid \d+'s memory at [0-9a-f]+-[0-9a-f]+, mapped from \/memfd:runsc-memory; its address spaces: pid [\d, ]+; its kernel: pid \d+/;
      for (const id of ['posture-seccomp', 'posture-capabilities', 'posture-devices']) {
        const r = expectVerdict('gvisor', id, 'held');
        expect(r.reason).toMatch(lead);
        expect(
          r.evidence.some((e) => e.witness === 'host-proc-mem'),
          explain(r),
        ).toBe(true);
      }
      // The ptrace platform keeps the Sentry and its stubs in the host's pid namespace; the gofer (root) has the host's
      // tini-static bound writable: findings about this runsc build, from the host's reads.
      expect(expectVerdict('gvisor', 'posture-namespaces', 'crossed').reason).toMatch(/address space \(pid \d+\) shares the host's pid namespace/);
      expect(expectVerdict('gvisor', 'posture-mounts', 'crossed').reason).toMatch(
        /file server \(pid \d+\) writable host \/usr\/bin\/tini-static at \/usr\/sbin\/docker-init/,
      );
      // Held on positive proof: the payload's and its marked child's address spaces found in the Sentry's processes.
      expect(expectVerdict('gvisor', 'kernel-identity@strict', 'held', /^host-proc-mem$/).reason).toMatch(
        /^the box's program runs on a user-space kernel, gVisor \(runsc\): the payload's address space \(this execution's nonce in host pid \d+'s memory.*\) and its marked child's \(this execution's program mark in host pid \d+'s memory.*\) belong to its kernel \(pid \d+\)/,
      );
    },
  );

  it('each weakened configuration crosses exactly what it opens, with outside evidence', () => {
    for (const id of ['posture-seccomp', 'posture-capabilities', 'posture-devices']) expectVerdict('privileged', id, 'crossed');
    expectVerdict('seccomp-unconfined', 'posture-seccomp', 'crossed');
    expect(expectVerdict('cap-sys-admin', 'posture-capabilities', 'crossed').reason).toMatch(/CAP_SYS_ADMIN/);
    expect(expectVerdict('host-pid-ipc', 'posture-namespaces', 'crossed').reason).toMatch(/shares the host's pid, ipc namespaces/);
    const mounts = expectVerdict('host-paths', 'posture-mounts', 'crossed');
    expect(
      mounts.evidence.some((e) => /host path \/etc at \/host-etc/.test(e.detail)),
      explain(mounts),
    ).toBe(true);
    expect(
      mounts.evidence.some((e) => /host Unix socket .* at \/var\/run\/docker\.sock/.test(e.detail)),
      explain(mounts),
    ).toBe(true);
  });

  it.skipIf(DISK === undefined)('a host disk given to the box as a device: posture-devices crossed', () => {
    expect(expectVerdict('host-disk', 'posture-devices', 'crossed').reason).toMatch(/\/dev\/hostdisk/);
  });
});
