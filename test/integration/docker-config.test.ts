/**
 * Your own container configuration (`--backend docker --backend-config FILE`): Docker's key names, claims
 * derived from the settings, the presets in the same format. Live part: one lab, one lab daemon started
 * with the run's decoy credentials in its environment (where a real control plane keeps its own), and one
 * backend per configuration on that daemon.
 *
 * Weakened files, each derived from examples/docker-hardened.yaml, declaring the hardened claims so their
 * probes run against the weakened box:
 * - host-pid-root-ptrace: PidMode host + root + CapAdd SYS_PTRACE. PidMode host alone is not enough on Linux:
 *   reading /proc/<pid>/environ of a root process with more capabilities needs CAP_SYS_PTRACE (ptrace access
 *   mode READ, cap_ptrace_access_check), so the three settings together are the weakening. → secret-decoy-env
 *   (dockerd's environ), decoy-process-environ, ptrace-host-decoy cross.
 * - no-pids-limit: PidsLimit removed → fork-bomb crosses.
 * - bridge: NetworkMode bridge → metadata-ipv4 crosses.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import createDockerBackend, {
  ContainerConfigSchema,
  createContainerConfigBackend,
  DEFAULT_LAB_DAEMON_ROOT,
  PROFILES,
  capabilitiesFor,
  hostConfigFor,
  startLabDaemon,
  type DockerBackend,
  type LabDaemon,
} from '../../backends/docker/index.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';
import { securitySuite } from '../../suites/security.js';
import { dockerLabSkipReason } from '../helpers/docker.js';

const temps: string[] = [];
/** A temporary directory of this file's tests, removed after them. */
async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(prefix);
  temps.push(d);
  return d;
}
afterAll(async () => {
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});

const HARDENED_FILE = await readFile(join(packageRoot(), 'examples', 'docker-hardened.yaml'), 'utf8').then((t) => parseYaml(t) as Record<string, unknown>);
const hardened = ContainerConfigSchema.parse(HARDENED_FILE);
const inLab = { inLab: true, endpoint: 'unix:///lab' };
const HARDENED_CLAIMS = capabilitiesFor(PROFILES['docker-hardened'], CI_POLICY, inLab, false).enforces;

/** The hardened file with some settings changed, declaring the hardened claims (what a team would still believe). */
function weakened(name: string, host: Record<string, unknown>, config: Record<string, unknown> = {}): Record<string, unknown> {
  const h = HARDENED_FILE as { Config: Record<string, unknown>; HostConfig: Record<string, unknown> };
  return { ...HARDENED_FILE, name, claims: [...HARDENED_CLAIMS], Config: { ...h.Config, ...config }, HostConfig: { ...h.HostConfig, ...host } };
}

describe('docker container configuration: Docker key names, derived claims', () => {
  it('a file equal to docker-hardened derives the same HostConfig and the same claims as the preset', () => {
    const input = { policy: CI_POLICY, volumeName: 'v', gvisorRuntime: 'runsc' };
    expect(hostConfigFor(hardened, input)).toEqual(hostConfigFor(PROFILES['docker-hardened'], input));
    expect([...capabilitiesFor(hardened, CI_POLICY, inLab, false).enforces].sort()).toEqual([...HARDENED_CLAIMS].sort());
  });

  it('each weakened setting takes away exactly its claims, with the reason', () => {
    const claims = (host: Record<string, unknown>, config: Record<string, unknown> = {}) => {
      const h = HARDENED_FILE as { Config: Record<string, unknown>; HostConfig: Record<string, unknown> };
      const c = ContainerConfigSchema.parse({ ...HARDENED_FILE, Config: { ...h.Config, ...config }, HostConfig: { ...h.HostConfig, ...host } });
      const caps = capabilitiesFor(c, CI_POLICY, inLab, false);
      return { lost: HARDENED_CLAIMS.filter((i) => !caps.enforces.includes(i)).sort(), reasons: caps.notEnforcedReasons ?? {} };
    };
    expect(claims({ NetworkMode: 'bridge' }).lost).toEqual(['network.egress']);
    expect(claims({ PidsLimit: null }).lost).toEqual(['resources.processes']);
    expect(claims({ PidsLimit: 4096 }).reasons['resources.processes']).toMatch(/above the policy's 64/);
    expect(claims({ PidMode: 'host' }).lost).toEqual(['identity.hostCredentials', 'posture.namespaces']);
    expect(claims({ ReadonlyRootfs: false }).lost).toEqual(['resources.diskMb']);
    expect(claims({ Memory: 0, MemorySwap: 0 }).lost).toEqual(['resources.memoryMb']);
    expect(claims({ Binds: ['/etc:/host-etc:ro'] }).lost).toEqual(['files.hostPaths', 'posture.hostMounts']);
    expect(claims({ Binds: ['/tmp:/tmp'] }).lost).toEqual(['files.hostPaths', 'files.writeScope', 'posture.hostMounts']);
    expect(claims({ Binds: ['/tmp:/tmp'] }).reasons['files.writeScope']).toMatch(/read-write: \/tmp:\/tmp/);
    expect(claims({}, { User: '' }).lost).toEqual(['files.readOnlyInput', 'identity.unprivileged']);
    expect(claims({ Privileged: true }).lost).toEqual([
      'files.hostPaths',
      'files.readOnlyInput',
      'files.writeScope',
      'identity.hostCredentials',
      'identity.unprivileged',
      'posture.capabilityBounding',
      'posture.devices',
      'posture.hostMounts',
      'posture.seccomp',
    ]);
    expect(claims({ SecurityOpt: ['seccomp=unconfined'] }).lost).toEqual(['posture.seccomp']);
    expect(claims({ CapAdd: ['SYS_ADMIN'] }).lost).toEqual(['identity.unprivileged', 'posture.capabilityBounding']);
  });

  it('refuses what it does not understand before anything runs, naming the key', async () => {
    const err = await createContainerConfigBackend({ HostConfig: { NetworkMode: 'none', CgroupnsMode: 'private', Oops: 1 } }).catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('CONFIG_INVALID');
    expect(String(err)).toMatch(/Oops/);
    const user = await createContainerConfigBackend({ Config: { User: 'nobody' } }).catch((e: unknown) => e);
    expect(String(user)).toMatch(/Config\.User/);
    const none = await createContainerConfigBackend({}).catch((e: unknown) => e);
    expect(String(none)).toMatch(/needs --backend-config/);
  });

  it('a seccomp profile given by path is read and inlined; an unreadable one is a config error', async () => {
    const dir = await tempDir(join(tmpdir(), 'sc-seccomp-'));
    const profile = join(dir, 'profile.json');
    await writeFile(profile, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['ptrace'], action: 'SCMP_ACT_ERRNO' }] }));
    const b = await createContainerConfigBackend({
      ...HARDENED_FILE,
      HostConfig: { ...(HARDENED_FILE['HostConfig'] as object), SecurityOpt: ['no-new-privileges', `seccomp=${profile}`] },
    });
    expect(b.parts.securityOpt?.[1]).toMatch(/^seccomp=\{"defaultAction":"SCMP_ACT_ALLOW"/);
    const bad = await createContainerConfigBackend({ ...HARDENED_FILE, HostConfig: { SecurityOpt: [`seccomp=${join(dir, 'missing.json')}`] } }).catch(
      (e: unknown) => e,
    );
    expect(bad instanceof SandcheckError && bad.code).toBe('CONFIG_INVALID');
  });
});

const SKIP = await dockerLabSkipReason();
const runId = `rdc${randomBytes(4).toString('hex')}`;
const byId = new Map(securitySuite.map((p) => [p.id, p]));
const CONTROLS = ['secret-decoy-env', 'decoy-process-environ', 'ptrace-host-decoy', 'fork-bomb', 'metadata-ipv4', 'identity-uid', 'read-only-input'];
let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;

async function runOn(backend: DockerBackend, ids: readonly string[]): Promise<Map<string, SecurityResult>> {
  if (!run) throw new Error('no run');
  const probes = ids.map((id) => {
    const p = byId.get(id);
    if (!p) throw new Error(`${id} is not in the security suite`);
    return p;
  });
  const { security } = await new Runner({ backend, policy: CI_POLICY, probes, run, concurrency: 2 }).run();
  return new Map(security.map((r) => [r.id, r]));
}
const explain = (r: SecurityResult | undefined): string => (r ? `${r.id}: ${r.verdict}: ${r.reason}` : 'did not run');
const onDaemon = (extra: Record<string, unknown>) => ({ socketPath: daemon?.socketPath, labNetnsPath: daemon?.netnsPath, runId, ...extra });

describe.skipIf(SKIP !== undefined)("docker container configuration on a lab daemon holding the run's decoy credentials", () => {
  beforeAll(async () => {
    lab = await openLab(runId, packageRoot());
    run = await openRunContext(runId, { lab });
    daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: join(DEFAULT_LAB_DAEMON_ROOT, runId), env: run.controllerEnv });
  }, 180_000);

  afterAll(async () => {
    await run?.dispose().catch(() => undefined);
    const stopped = await daemon?.stop();
    await lab?.close().catch(() => undefined);
    expect(stopped?.leftovers ?? []).toEqual([]);
  }, 60_000);

  it("the hardened file gives the preset's verdicts; each weakened file crosses exactly its probes, with outside evidence", async () => {
    const preset = await runOn(
      await createDockerBackend({ profile: 'docker-hardened', ...onDaemon({}) } as Parameters<typeof createDockerBackend>[0]),
      CONTROLS,
    );
    const file = await runOn(await createContainerConfigBackend({ ...HARDENED_FILE, ...onDaemon({}) }), CONTROLS);
    for (const id of CONTROLS) expect(`${id}: ${file.get(id)?.verdict}`, explain(file.get(id))).toBe(`${id}: ${preset.get(id)?.verdict}`);
    for (const id of ['secret-decoy-env', 'decoy-process-environ', 'ptrace-host-decoy', 'fork-bomb', 'metadata-ipv4'])
      expect(preset.get(id)?.verdict, explain(preset.get(id))).toBe('held');

    const cases: [Record<string, unknown>, string[]][] = [
      [
        weakened('host-pid-root-ptrace', { PidMode: 'host', CapAdd: ['SYS_PTRACE'] }, { User: '0:0' }),
        ['secret-decoy-env', 'decoy-process-environ', 'ptrace-host-decoy'],
      ],
      [weakened('no-pids-limit', { PidsLimit: null }), ['fork-bomb']],
      [weakened('bridge', { NetworkMode: 'bridge' }), ['metadata-ipv4']],
    ];
    for (const [cfg, crossing] of cases) {
      const got = await runOn(await createContainerConfigBackend({ ...cfg, ...onDaemon({}) }), crossing);
      for (const id of crossing) {
        const r = got.get(id);
        expect(`${cfg['name']}/${id}: ${r?.verdict}`, explain(r)).toBe(`${cfg['name']}/${id}: crossed`);
        expect(
          r?.evidence.some((e) => e.source === 'outside'),
          explain(r),
        ).toBe(true);
      }
      if (cfg['name'] === 'host-pid-root-ptrace') {
        // The controller's decoy credentials live only in the lab daemon's environment: they came from /proc/<dockerd>/environ.
        const env = got.get('secret-decoy-env');
        expect(
          env?.evidence.some((e) => e.source === 'outside' && e.witness === 'canary-scan' && /decoy value env:/.test(e.detail)),
          explain(env),
        ).toBe(true);
      }
    }
  }, 900_000);
});
