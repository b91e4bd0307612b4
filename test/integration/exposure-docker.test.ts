/**
 * The exposure probes (suites/exposure.ts) on Docker, in one lab with one lab daemon: held on the
 * docker-hardened and gvisor presets, and each crossed on a container file (`--backend-config`, Docker's key
 * names) derived from examples/docker-hardened.yaml that opens exactly its hole, declaring the hardened
 * claims (what a team would still believe):
 * - host-dirs-bound: Binds of the run's decoy home, /run-like and /tmp-like directories at other paths,
 *   read-only, box still uid 65529 → host-search and agent-socket cross.
 * - daemon-socket-bound: Binds of the lab daemon's own socket at /run/sc-engine/docker.sock, the box's
 *   group being the socket's (a user in the docker group). The harness watches that daemon's event log:
 *   host-search's nonce-named volume, created and removed, is the witness → host-search crosses.
 * - keyring-root-unconfined: User 0:0 and SecurityOpt seccomp=unconfined: the container's root shares the
 *   host root's user keyring (no user namespace) and keyctl is no longer filtered → keyring-decoy crosses.
 * - host-network: NetworkMode host, which on the lab daemon is the lab's namespace → abstract-socket crosses.
 * - host-ipc: IpcMode host (the host's System V IPC and /dev/shm) → ipc-covert crosses.
 */
import { randomBytes } from 'node:crypto';
import { chmod, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import createDockerBackend, {
  PROFILES,
  capabilitiesFor,
  createContainerConfigBackend,
  type DockerBackend,
  type LabDaemon,
} from '../../backends/docker/index.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import type { RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import type { LabSession } from '../../lab/lab-session.js';
import { exposureProbes } from '../../suites/exposure.js';
import { dockerLabSkipReason } from '../helpers/docker.js';
import { closeDaemonRun, openDaemonRun } from '../helpers/lab-daemon.js';

const SKIP = await dockerLabSkipReason();
const runId = `rxd${randomBytes(4).toString('hex')}`;
const ALL = exposureProbes.map((p) => p.id);
const WITNESS: Record<string, RegExp> = {
  'host-search': /^(canary-scan|decoy-socket|daemon-event-log)$/,
  'host-credential-paths': /^host-file-hash$/,
  'agent-socket': /^(decoy-socket|canary-scan)$/,
  'keyring-decoy': /^canary-scan$/,
  'abstract-socket': /^(decoy-socket|canary-scan)$/,
  'ipc-covert': /^canary-scan$/,
};
const HARDENED_FILE = await readFile(join(packageRoot(), 'examples', 'docker-hardened.yaml'), 'utf8').then(
  (t) => parseYaml(t) as { Config: Record<string, unknown>; HostConfig: Record<string, unknown> },
);
const HARDENED_CLAIMS = capabilitiesFor(PROFILES['docker-hardened'], CI_POLICY, { inLab: true, endpoint: 'unix:///lab' }, false).enforces;

let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;

function weakened(name: string, host: Record<string, unknown>, config: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...HARDENED_FILE,
    name,
    claims: [...HARDENED_CLAIMS],
    Config: { ...HARDENED_FILE.Config, ...config },
    HostConfig: { ...HARDENED_FILE.HostConfig, ...host },
  };
}
const onDaemon = () => ({ socketPath: daemon?.socketPath, labNetnsPath: daemon?.netnsPath, runId });

async function runOn(backend: DockerBackend, ids: readonly string[]): Promise<Map<string, SecurityResult>> {
  if (!run) throw new Error('no run');
  const probes = exposureProbes.filter((p) => ids.includes(p.id));
  const { security } = await new Runner({ backend, policy: CI_POLICY, probes, run, concurrency: 2 }).run();
  console.log(security.map((r) => `${backend.name}: ${r.id} ${r.verdict}: ${r.reason.slice(0, 140)}`).join('\n'));
  return new Map(security.map((r) => [r.id, r]));
}
const explain = (r: SecurityResult | undefined): string =>
  r ? `${r.id}: ${r.verdict}: ${r.reason}\n${r.evidence.map((e) => `  ${e.source} ${e.witness}: ${e.detail.slice(0, 200)}`).join('\n')}` : 'did not run';

/**
 * Inconclusive instead of held for a cause of the machine, not of the box: the host sees nothing inside
 * gVisor's sentry, so where the harness cannot hash its own pid 1's environment (a host whose pid 1 refuses
 * even root), host-credential-paths has no outside view of the box's /proc/1/environ.
 */
const MACHINE_LIMITS: Record<string, RegExp> = {
  'gvisor/host-credential-paths': /^\/proc\/1\/environ: the host could not read its own file to compare/,
};

/**
 * Held for the right cause: Docker's seccomp profile refuses keyctl in the payload's own interpreter; gVisor's
 * kernel, tied to the payload by its nonce, refuses it itself (a filter on runsc's own processes is not the cause).
 */
const HELD_BECAUSE: Record<string, RegExp> = {
  'docker-hardened/keyring-decoy': /^the keyring system calls were refused in the box, and the host saw a seccomp filter on its processes$/,
  'gvisor/keyring-decoy':
    /^the box's program runs on a user-space kernel, gVisor \(runsc\) \(this execution's nonce in host pid \d+'s memory.*: the keyring system calls were refused by that kernel/,
};

/** Every mismatch of a variant (wrong verdict, held for another cause, or no outside witness of the expected kind), with the result. */
function mismatches(got: Map<string, SecurityResult>, crossing: readonly string[], variant: string): string[] {
  return ALL.flatMap((id) => {
    const r = got.get(id);
    const want = crossing.includes(id) ? 'crossed' : 'held';
    if (want === 'held' && r?.verdict === 'inconclusive' && MACHINE_LIMITS[`${variant}/${id}`]?.test(r.reason)) return [];
    if (r?.verdict !== want) return [`${variant}/${id}: want ${want}, got ${explain(r)}`];
    const cause = want === 'held' ? HELD_BECAUSE[`${variant}/${id}`] : undefined;
    if (cause && !cause.test(r.reason)) return [`${variant}/${id}: held for another cause: ${explain(r)}`];
    const witnessed = r.evidence.some((e) => e.source === 'outside' && (want === 'held' || WITNESS[id]?.test(e.witness)));
    return witnessed ? [] : [`${variant}/${id}: no outside witness: ${explain(r)}`];
  });
}

describe.skipIf(SKIP !== undefined)('exposure probes on docker: hardened presets hold, each weakened file crosses its hole', () => {
  beforeAll(async () => {
    ({ lab, run, daemon } = await openDaemonRun(runId));
    // The run's own daemon is the real daemon a box may be handed: its event log is the witness.
    run.watchDaemons.push(daemon.socketPath);
    await chmod(run.scratchDir, 0o711);
  }, 240_000);

  afterAll(async () => {
    expect(await closeDaemonRun({ lab, run, daemon })).toEqual([]);
    expect((await readFile('/proc/keys', 'utf8')).includes(`sandcheck-decoy:${runId}`)).toBe(false);
    expect((await readdir('/dev/shm')).filter((n) => n.startsWith('sandcheck-'))).toEqual([]);
  }, 120_000);

  it('docker-hardened and gvisor hold every exposure probe', async () => {
    const wrong = [
      ...mismatches(await runOn(await createDockerBackend({ profile: 'docker-hardened', ...onDaemon() }), ALL), [], 'docker-hardened'),
      ...mismatches(await runOn(await createDockerBackend({ profile: 'gvisor', ...onDaemon() }), ALL), [], 'gvisor'),
    ];
    expect(wrong).toEqual([]);
  }, 600_000);

  it('each weakened container file crosses exactly its probes, with outside evidence', async () => {
    if (!run || !daemon) throw new Error('no run');
    const socketGid = (await stat(daemon.socketPath)).gid;
    const cases: [Record<string, unknown>, string[]][] = [
      [
        weakened('host-dirs-bound', {
          Binds: [
            `${run.decoyDir}:/mnt/host-home:ro`,
            `${join(run.scratchDir, 'decoy-run')}:/srv/host-run:ro`,
            `${join(run.scratchDir, 'decoy-tmp')}:/var/host-tmp:ro`,
          ],
        }),
        ['host-search', 'agent-socket'],
      ],
      [weakened('daemon-socket-bound', { Binds: [`${daemon.socketPath}:/run/sc-engine/docker.sock`] }, { User: `65529:${socketGid}` }), ['host-search']],
      [weakened('keyring-root-unconfined', { SecurityOpt: ['no-new-privileges', 'seccomp=unconfined'] }, { User: '0:0' }), ['keyring-decoy']],
      [weakened('host-network', { NetworkMode: 'host' }), ['abstract-socket']],
      [weakened('host-ipc', { IpcMode: 'host' }), ['ipc-covert']],
    ];
    const wrong: string[] = [];
    for (const [cfg, crossing] of cases) {
      const got = await runOn(await createContainerConfigBackend({ ...cfg, ...onDaemon() }), ALL);
      wrong.push(...mismatches(got, crossing, String(cfg['name'])));
      if (cfg['name'] === 'daemon-socket-bound') {
        // The daemon's own log, not a decoy: the box's nonce-named volume call came back from the real daemon.
        const r = got.get('host-search');
        expect(
          r?.evidence.some((e) => e.source === 'outside' && e.witness === 'daemon-event-log' && /volume/.test(e.detail)),
          explain(r),
        ).toBe(true);
        // …and removed again by the payload: no volume carrying its label is left on the daemon.
        expect(await daemon.client.listVolumes(['sandcheck'])).toEqual([]);
      }
    }
    expect(wrong).toEqual([]);
  }, 900_000);
});
