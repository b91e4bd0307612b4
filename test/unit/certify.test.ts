import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { certifyAfterRun, certifyBackend, skipsForMissingParts } from '../../cli/certify-command.js';
import { collectEnvironment } from '../../harness/environment-facts.js';
import { securitySuite } from '../../suites/index.js';
import { cardFiles } from '../../reports/write-cards.js';
import { FAST_POLICY } from '../helpers/fake-run.js';
import { fabricatedRun, secResult } from './gate-fixtures.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const UNSEEN = "the daemon runs outside the run's lab: its boxes must not send network probes";
const egress = securitySuite.find((p) => p.policyItem === 'network.egress');
const other = securitySuite.find((p) => p.policyItem !== 'network.egress');

describe('--certify refuses skips for a missing tool or lab part', () => {
  it('no lab and an unobservable item are missing parts; an item the policy does not require and a host too small are not', () => {
    const results = [
      secResult('metadata-ipv4', 'not-applicable', { reason: 'no lab: `ip` is not installed', policyItem: 'network.egress' }),
      secResult('public-egress', 'not-applicable', { reason: UNSEEN, policyItem: 'network.egress' }),
      secResult('disk-fill', 'not-applicable', {
        reason: 'resources.diskMb is not required by policy ci; the backend does not enforce it: no quota',
        policyItem: 'resources.diskMb',
      }),
      secResult('cpu-quota', 'not-applicable', {
        reason: "this machine has 2 cores: the policy's 2 cpus cannot be told apart from the host",
        policyItem: 'resources.cpus',
      }),
      secResult('fork-bomb', 'held'),
    ];
    expect(skipsForMissingParts(results, { 'network.egress': UNSEEN }).map((r) => r.id)).toEqual(['metadata-ipv4', 'public-egress']);
  });

  it('refuses before the run when the backend declares a selected probe unobservable, not when none is selected', () => {
    expect(egress && other).toBeTruthy();
    const backend = new FakeBackend(() => ({}), { isolation: 'sandbox', enforces: POLICY_ITEMS, notObservable: { 'network.egress': UNSEEN } });
    expect(() => certifyBackend(backend, FAST_POLICY, [egress!])).toThrow(/--certify refuses a run whose probes would be skipped/);
    expect(() => certifyBackend(backend, FAST_POLICY, [other!])).not.toThrow();
  });

  it('after the run: an incomplete run or a skip for a missing lab writes no bundle', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-certify-'));
    dirs.push(dir);
    const bundle = join(dir, 'bundle');
    const environment = await collectEnvironment({ policy: FAST_POLICY, backendName: 'fake' });
    const ctx = { backend: new FakeBackend(() => ({})), backendKind: 'fake', policy: FAST_POLICY, probes: [], environment };
    const noLab = fabricatedRun('a', [secResult('metadata-ipv4', 'not-applicable', { reason: 'no lab: not root', policyItem: 'network.egress' })]);
    await expect(certifyAfterRun(bundle, { ...noLab, files: cardFiles(dir) }, ctx)).rejects.toThrow(
      /skipped because a tool or lab part is missing: metadata-ipv4/,
    );
    const done = fabricatedRun('b', [secResult('fork-bomb', 'held')]);
    const incomplete = { ...done.security, run: { ...done.security.run, incomplete: true } };
    await expect(certifyAfterRun(bundle, { security: incomplete, task: done.task, files: cardFiles(dir) }, ctx)).rejects.toThrow(/did not finish/);
    expect(existsSync(bundle)).toBe(false);
  });
});
