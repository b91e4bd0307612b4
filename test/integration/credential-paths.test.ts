/**
 * host-credential-paths on real boxes, judged from outside against the host's own files: crossed on the
 * unsandboxed `process` control (the harness runs as root, so the host's /etc/shadow is readable) and on a
 * bwrap variant with the host's /etc bound read-only at /etc and the box host root in the host's user
 * namespace; held on hardened bwrap (no host /etc in the box, uid 65529 in its own user and PID namespaces).
 * On Docker (a lab daemon): held on docker-hardened (and gvisor, where the host can hash its own pid 1's
 * environment: the host sees nothing inside the sentry), crossed on the hardened container file run as
 * root with the host's /etc/shadow and /etc/gshadow bound read-only.
 * No content, and no plain hash, of a host file appears in any result: only whether nonce-bound hashes matched.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { access, chmod, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import createBwrapBackend, { type BwrapOptions } from '../../backends/bwrap/index.js';
import type { Backend } from '../../model/backend-contract.js';
import createDockerBackend, { PROFILES, capabilitiesFor, createContainerConfigBackend, type LabDaemon } from '../../backends/docker/index.js';
import createProcessBackend from '../../backends/process/index.js';
import { CI_POLICY } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { probeLabSupport, type LabSession } from '../../lab/lab-session.js';
import { hostCredentialPaths } from '../../probes/host-credential-paths/probe.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { closeDaemonRun, openDaemonRun } from '../helpers/lab-daemon.js';

const SKIP = (await bwrapSkipReason()) ?? (existsSync('/etc/shadow') ? undefined : 'this host has no /etc/shadow to be read');
const PREFIX = `rcp${randomBytes(2).toString('hex')}`;
let seq = 0;

const explain = (r: SecurityResult | undefined): string =>
  r
    ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 300)}`).join('\n  ')}`
    : 'did not run';

async function runOn(backend: Backend | BwrapOptions, inRun?: RunContext): Promise<SecurityResult> {
  const b = 'capabilities' in backend ? backend : await createBwrapBackend(backend);
  const run = inRun ?? (await openRunContext(`${PREFIX}${(seq++).toString(36)}`));
  try {
    const { security } = await new Runner({ backend: b, policy: CI_POLICY, probes: [hostCredentialPaths], run, concurrency: 1 }).run();
    const r = security[0];
    console.log(`${b.name}: ${explain(r)}`);
    if (!r) throw new Error('no result');
    return r;
  } finally {
    if (!inRun) await run.dispose();
  }
}

/**
 * Nothing of a host file in the result: no 64-hex value in its reason or evidence, and neither the plain
 * sha256 nor a line of the host's /etc/shadow anywhere in it (observation included). Compared as booleans,
 * so a failure prints the result, never the host's values.
 */
function expectNothingOfTheHost(r: SecurityResult): void {
  expect(JSON.stringify({ reason: r.reason, evidence: r.evidence })).not.toMatch(/[0-9a-f]{64}/);
  const whole =
    JSON.stringify(r) +
    Buffer.from(r.observation?.stdout.headBase64 ?? '', 'base64').toString('utf8') +
    Buffer.from(r.observation?.stdout.tailBase64 ?? '', 'base64').toString('utf8');
  const shadow = readFileSync('/etc/shadow');
  const plain = createHash('sha256').update(shadow).digest('hex');
  const lines = shadow
    .toString('utf8')
    .split('\n')
    .filter((l) => l.length > 8);
  expect(whole.includes(plain), 'the plain hash of the host file is in the result').toBe(false);
  expect(
    lines.some((l) => whole.includes(l)),
    'a line of the host file is in the result',
  ).toBe(false);
}

describe.skipIf(SKIP !== undefined)(`host-credential-paths on real boxes${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it("the unsandboxed process control crosses: its /etc/shadow hash equals the host's own, and the host saw its own inode in the box's root", async () => {
    const r = await runOn(await createProcessBackend());
    expect(r.verdict, explain(r)).toBe('crossed');
    const hash = r.evidence.find((e) => e.source === 'outside' && e.witness === 'host-file-hash' && e.detail.startsWith('/etc/shadow:'));
    expect(hash?.detail, explain(r)).toMatch(/is equal: the box read the host's bytes; the host saw at \/etc\/shadow in the box's root the host's own file/);
    expectNothingOfTheHost(r);
  }, 120_000);

  it("bwrap with the host's /etc bound read-only and the box host root crosses", async () => {
    const r = await runOn({ extraBinds: [{ src: '/etc', dest: '/etc', readOnly: true }], unprivilegedUid: null, unshareUser: false });
    expect(r.verdict, explain(r)).toBe('crossed');
    expect(
      r.evidence.some((e) => e.source === 'outside' && e.witness === 'host-file-hash' && /^\/etc\/shadow: .* is equal/.test(e.detail)),
      explain(r),
    ).toBe(true);
    expectNothingOfTheHost(r);
  }, 120_000);

  it("hardened bwrap holds, with the host's look into the box's root on record", async () => {
    const r = await runOn({});
    expect(r.verdict, explain(r)).toBe('held');
    expect(
      r.evidence.some(
        (e) => e.source === 'outside' && e.witness === 'host-proc-root' && /^\/etc\/shadow in the box's root: no file there \(ENOENT\)/.test(e.detail),
      ),
      explain(r),
    ).toBe(true);
    expectNothingOfTheHost(r);
  }, 120_000);
});

const executable = (p: string): Promise<boolean> =>
  access(p, constants.X_OK).then(
    () => true,
    () => false,
  );
async function dockerSkip(): Promise<string | undefined> {
  if (SKIP !== undefined) return SKIP;
  if (!(await executable('/usr/sbin/dockerd')) && !(await executable('/usr/bin/dockerd'))) return 'dockerd is not installed';
  const lab = await probeLabSupport();
  return lab.available ? undefined : `no lab: ${lab.reason}`;
}
const DOCKER_SKIP = await dockerSkip();

/** Docker in a lab with its own daemon (test/integration/exposure-docker.test.ts): the hardened presets hold; root with the host's shadow files bound in crosses. */
describe.skipIf(DOCKER_SKIP !== undefined)(`host-credential-paths on docker${DOCKER_SKIP ? ` (skipped: ${DOCKER_SKIP})` : ''}`, () => {
  const runId = `rcd${randomBytes(4).toString('hex')}`;
  let lab: LabSession | undefined;
  let daemon: LabDaemon | undefined;
  let run: RunContext | undefined;
  const onDaemon = () => ({ socketPath: daemon?.socketPath, labNetnsPath: daemon?.netnsPath, runId });

  beforeAll(async () => {
    ({ lab, run, daemon } = await openDaemonRun(runId));
    await chmod(run.scratchDir, 0o711);
  }, 240_000);

  afterAll(async () => {
    expect(await closeDaemonRun({ lab, run, daemon })).toEqual([]);
  }, 120_000);

  it("docker-hardened holds, gvisor holds unless this host cannot hash its own pid 1 environment; the same container as root with the host's /etc/shadow and /etc/gshadow bound read-only crosses", async () => {
    // gVisor: the host sees no process of the box (only the sentry), so no root lookup and no PID namespace view;
    // held on the host's hashes, or inconclusive only where the host cannot hash its own pid 1's environment.
    const gv = await runOn(await createDockerBackend({ profile: 'gvisor', ...onDaemon() }), run);
    if (gv.verdict !== 'held')
      expect(`${gv.verdict}: ${gv.reason}`, explain(gv)).toMatch(/^inconclusive: \/proc\/1\/environ: the host could not read its own file to compare/);
    expectNothingOfTheHost(gv);
    const held = await runOn(await createDockerBackend({ profile: 'docker-hardened', ...onDaemon() }), run);
    expect(held.verdict, explain(held)).toBe('held');
    expect(
      held.evidence.some(
        (e) =>
          e.source === 'outside' &&
          e.witness === 'host-proc-root' &&
          e.detail.startsWith("/etc/shadow in the box's root: ") &&
          !e.detail.includes("the host's own file"),
      ),
      explain(held),
    ).toBe(true);
    expectNothingOfTheHost(held);
    const file = parseYaml(readFileSync(join(packageRoot(), 'examples', 'docker-hardened.yaml'), 'utf8')) as {
      Config: Record<string, unknown>;
      HostConfig: Record<string, unknown>;
    };
    // The hardened claims kept (what a team would still believe), as in exposure-docker.test.ts.
    const claims = capabilitiesFor(PROFILES['docker-hardened'], CI_POLICY, { inLab: true, endpoint: 'unix:///lab' }, false).enforces;
    const weakened = {
      ...file,
      name: 'shadow-bound-root',
      claims: [...claims],
      Config: { ...file.Config, User: '0:0' },
      HostConfig: { ...file.HostConfig, Binds: ['/etc/shadow:/etc/shadow:ro', '/etc/gshadow:/etc/gshadow:ro'] },
    };
    const crossed = await runOn(await createContainerConfigBackend({ ...weakened, ...onDaemon() }), run);
    expect(crossed.verdict, explain(crossed)).toBe('crossed');
    expect(
      crossed.evidence.some((e) => e.source === 'outside' && e.witness === 'host-file-hash' && /^\/etc\/shadow: .* is equal/.test(e.detail)),
      explain(crossed),
    ).toBe(true);
    expectNothingOfTheHost(crossed);
  }, 600_000);
});
