/**
 * The agent-sandbox write probes on docker-hardened (issue 40), with a private dockerd inside a lab of this file's
 * own (as in docker-new-probes.test.ts): write-outside-scope held; write-protected-path and read-denied-path not claimed
 * (nothing makes a path inside the container's workspace read-only or hides one), so not-applicable under ci and run
 * unclaimed (crossed) when the policy asks.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import createDockerBackend, { DEFAULT_LAB_DAEMON_ROOT, startLabDaemon, type DockerBackend, type LabDaemon } from '../../backends/docker/index.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';
import { securitySuite } from '../../suites/security.js';
import { dockerLabSkipReason } from '../helpers/docker.js';

const SKIP = await dockerLabSkipReason();
const runId = `raw${randomBytes(4).toString('hex')}`;

const explain = (r: SecurityResult | undefined): string =>
  r ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}] ${e.detail.slice(0, 400)}`).join('\n  ')}` : 'did not run';

let lab: LabSession | undefined;
let daemon: LabDaemon | undefined;
let run: RunContext | undefined;
let backend: DockerBackend | undefined;
let gvisor: DockerBackend | undefined;
const HAVE_RUNSC = await access('/usr/bin/runsc', constants.X_OK).then(
  () => true,
  () => false,
);

async function runOn(id: string, policy: Policy = CI_POLICY, on = backend): Promise<SecurityResult | undefined> {
  if (!run || !on) throw new Error('no run');
  const probe = securitySuite.find((p) => p.id === id);
  if (!probe) throw new Error(`${id} is not in the security suite`);
  const { security } = await new Runner({ backend: on, policy, probes: [probe], run, concurrency: 1 }).run();
  return security.find((r) => r.id === id);
}

describe.skipIf(SKIP !== undefined)(`docker-hardened: the agent write probes${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  beforeAll(async () => {
    lab = await openLab(runId, packageRoot());
    daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: join(DEFAULT_LAB_DAEMON_ROOT, runId) });
    run = await openRunContext(runId, { lab });
    backend = await createDockerBackend({ profile: 'docker-hardened', socketPath: daemon.socketPath, labNetnsPath: daemon.netnsPath, runId });
    await backend.preflight();
    if (HAVE_RUNSC) gvisor = await createDockerBackend({ profile: 'gvisor', socketPath: daemon.socketPath, labNetnsPath: daemon.netnsPath, runId });
  }, 180_000);

  afterAll(async () => {
    await run?.dispose().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await lab?.close().catch(() => undefined);
  }, 60_000);

  it('write-outside-scope: held, the in-scope write seen through the download API', async () => {
    const r = await runOn('write-outside-scope');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.evidence.find((e) => e.witness === 'write-control')?.detail).toMatch(/ends in the payload's answer/);
  });

  it('write-protected-path: not claimed, so not-applicable under ci; when the policy asks, run anyway and crossed — not claimed', async () => {
    const na = await runOn('write-protected-path');
    expect(na?.verdict, explain(na)).toBe('not-applicable');
    expect(na?.reason).toMatch(/read-only/);
    const asked = await runOn('write-protected-path', { ...CI_POLICY, files: { ...CI_POLICY.files, protected: ['.git/hooks'] } });
    expect(`${asked?.verdict}, claimed ${asked?.claimed}`, explain(asked)).toBe('crossed, claimed false');
  });

  it('read-denied-path: not claimed (nothing hides a file inside the workspace), so not-applicable under ci; when the policy asks, run anyway and crossed — not claimed', async () => {
    const na = await runOn('read-denied-path');
    expect(na?.verdict, explain(na)).toBe('not-applicable');
    expect(na?.reason).toMatch(/hides no file/);
    const asked = await runOn('read-denied-path', { ...CI_POLICY, files: { ...CI_POLICY.files, denyRead: ['.env', '*.pem', 'id_*'] } });
    console.log(explain(asked));
    expect(`${asked?.verdict}, claimed ${asked?.claimed}`, explain(asked)).toBe('crossed, claimed false');
  });

  it.skipIf(!HAVE_RUNSC)('gvisor: write-outside-scope held too (claimed from its settings: no read-write host bind)', async () => {
    const r = await runOn('write-outside-scope', CI_POLICY, gvisor);
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
  });
});
