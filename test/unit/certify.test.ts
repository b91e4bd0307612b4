import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { certifyAfterRun, certifyBackend, skipsForMissingParts } from '../../cli/certify-command.js';
import { collectEnvironment } from '../../harness/environment-facts.js';
import { securitySuite } from '../../suites/index.js';
import { BUNDLE_FILES, MANIFEST, manifestText, verifyBundle, type BundleProblem } from '../../reports/bundle.js';
import { sarifText, type SarifLog } from '../../reports/sarif.js';
import { cardFiles, writeScorecards } from '../../reports/write-cards.js';
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

  it('a bundle holds security.sarif: written byte for byte, in the manifest, and verify finds it changed, missing or not the projection of its card', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-certify-'));
    dirs.push(dir);
    const out = join(dir, 'out');
    const run = fabricatedRun('sarif', [secResult('fork-bomb', 'crossed'), secResult('disk-fill', 'inconclusive'), secResult('cpu-quota', 'held')]);
    const written = await writeScorecards(out, run);
    const environment = await collectEnvironment({ policy: FAST_POLICY, backendName: 'bwrap' });
    const ctx = { backend: new FakeBackend(() => ({})), backendKind: 'fake', policy: FAST_POLICY, probes: [], environment };
    const bundle = join(dir, 'bundle');
    const manifest = await certifyAfterRun(bundle, written, ctx);
    expect(BUNDLE_FILES).toContain('security.sarif');
    expect((await readdir(bundle)).sort()).toEqual([...BUNDLE_FILES, MANIFEST].sort());
    const sarif = await readFile(join(bundle, 'security.sarif'));
    expect(sarif.equals(await readFile(written.files.securitySarif))).toBe(true);
    expect(await readFile(manifest, 'utf8')).toContain(`${createHash('sha256').update(sarif).digest('hex')}  security.sarif\n`);
    const log = JSON.parse(sarif.toString('utf8')) as SarifLog;
    expect(log.runs[0]?.results.map((r) => r.ruleId)).toEqual(['fork-bomb', 'disk-fill']);
    expect(await verifyBundle(bundle)).toEqual([]);

    // A copy of the bundle with `edit` applied to security.sarif and the manifest made to match: verify's problems.
    const tampered = async (name: string, edit: (doc: SarifLog) => SarifLog | undefined): Promise<BundleProblem[]> => {
      const copy = join(dir, name);
      await cp(bundle, copy, { recursive: true });
      const doc = edit(structuredClone(log));
      if (doc) await writeFile(join(copy, 'security.sarif'), sarifText(doc));
      else await rm(join(copy, 'security.sarif'));
      const entries = [];
      for (const file of BUNDLE_FILES) {
        const bytes = await readFile(join(copy, file)).catch(() => undefined);
        if (bytes) entries.push({ file, sha256: createHash('sha256').update(bytes).digest('hex') });
      }
      await writeFile(join(copy, MANIFEST), manifestText(entries));
      return verifyBundle(copy);
    };
    // Only where each result points in its spec may differ from this package's sources (another sandcheck wrote it).
    expect(
      await tampered('moved', (d) => {
        d.runs[0]!.results[0]!.locations[0]!.physicalLocation.region = { startLine: 3, startColumn: 1, endLine: 3, endColumn: 9 };
        return d;
      }),
    ).toEqual([]);
    expect(
      await tampered('dropped', (d) => {
        d.runs[0]!.results.shift();
        return d;
      }),
    ).toEqual([{ file: 'security.sarif', problem: 'is not the SARIF projection of its scorecard' }]);
    expect(
      await tampered('reworded', (d) => {
        d.runs[0]!.results[0]!.message.text = 'HELD: nothing to see';
        return d;
      }),
    ).toEqual([{ file: 'security.sarif', problem: 'is not the SARIF projection of its scorecard' }]);
    expect(
      await tampered('nonsense-region', (d) => {
        d.runs[0]!.results[0]!.locations[0]!.physicalLocation.region = { startLine: 0, startColumn: 1, endLine: 0, endColumn: 1 };
        return d;
      }),
    ).toEqual([{ file: 'security.sarif', problem: 'the region of fork-bomb is not a line and column range' }]);
    expect(await tampered('missing', () => undefined)).toEqual([{ file: 'security.sarif', problem: 'a bundle file the manifest does not list' }]);
    // A changed byte without a matching manifest: the hash names it.
    const flipped = join(dir, 'flipped');
    await cp(bundle, flipped, { recursive: true });
    const bytes = Buffer.from(sarif);
    bytes[10] = (bytes[10] ?? 0) ^ 0x01;
    await writeFile(join(flipped, 'security.sarif'), bytes);
    expect((await verifyBundle(flipped)).map((p) => p.file)).toContain('security.sarif');
  });
});
