import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { securityScorecard } from '../../harness/scorecard-builder.js';
import { securitySarif } from '../../reports/sarif.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

// The SARIF 2.1.0 schema (OASIS errata 01) as Microsoft's SARIF SDK ships it: see test/fixtures/sarif/README.md.
const schema = JSON.parse(readFileSync(join(packageRoot(), 'test', 'fixtures', 'sarif', 'sarif-2.1.0.json'), 'utf8')) as object;
const ajv = new Ajv2020({ strict: false, allErrors: true });
formats.default(ajv);
const validateSarif = ajv.compile(schema);

const outsideSeen = { source: 'outside' as const, witness: 'canary-scan', where: 'stdout', detail: 'decoy value came out of the box' };
const insideSaid = { source: 'inside' as const, witness: 'payload-report', where: 'stdout', detail: 'the box says HELD' };

function result(id: string, verdict: SecurityResult['verdict'], severity: SecurityResult['severity'], extra: Partial<SecurityResult> = {}): SecurityResult {
  return {
    id,
    title: `${id} title`,
    category: 'files',
    policyItem: 'files.hostPaths',
    severity,
    verdict,
    reason: `${id} reason`,
    remediation: `${id} remedy`,
    evidence: [outsideSeen, insideSaid],
    durationMs: 1,
    ...extra,
  };
}

function sarifOf(results: SecurityResult[]) {
  const meta = { runId: 'rsarif0001', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
  return securitySarif(withThreatMapping(securityScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, results)));
}

const mixed = () =>
  sarifOf([
    result('secret-decoy-file', 'crossed', 'critical'),
    result('identity-uid', 'unenforced', 'high'),
    result('cpu-quota', 'crossed', 'medium'),
    result('hostile-bytes', 'crossed', 'low'),
    result('disk-fill', 'inconclusive', 'medium'),
    result('residue', 'held', 'medium'),
    result('dns-exfil', 'not-applicable', 'high'),
  ]);

describe('security.sarif', () => {
  it('validates against the SARIF 2.1.0 schema, and a broken log does not', () => {
    const log = mixed();
    expect(validateSarif(log), JSON.stringify(validateSarif.errors)).toBe(true);
    const broken = structuredClone(log);
    Object.assign(broken.runs[0]!.results[0]!, { level: 'fatal' });
    expect(validateSarif(broken)).toBe(false);
    expect(validateSarif({ ...log, version: '2.0.0' })).toBe(false);
  });

  it('one rule per probe, with ATT&CK, CWE and category tags, help = remediation and a security-severity', () => {
    const driver = mixed().runs[0]!.tool.driver;
    expect(driver.name).toBe('sandcheck');
    expect(driver.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(driver.informationUri).toMatch(/^https:\/\//);
    expect(driver.rules.map((r) => r.id)).toEqual(['secret-decoy-file', 'identity-uid', 'cpu-quota', 'hostile-bytes', 'disk-fill', 'residue', 'dns-exfil']);
    const rule = driver.rules[0]!;
    expect(rule.properties.tags).toEqual(expect.arrayContaining(['security', 'files', 'T1552.001', 'CWE-552', 'external/cwe/cwe-552']));
    expect(rule).toMatchObject({ shortDescription: { text: 'secret-decoy-file title' }, help: { text: 'secret-decoy-file remedy' } });
    expect(rule.properties['security-severity']).toBe('9.5');
    // SARIF1001: a rule's name is not its id, even for a one-word id.
    for (const r of driver.rules) expect(r.name.toLowerCase()).not.toBe(r.id.toLowerCase());
  });

  it('results for crossed, unenforced and inconclusive only, at the level the severity maps to', () => {
    const run = mixed().runs[0]!;
    expect(run.results.map((r) => [r.ruleId, r.level])).toEqual([
      ['secret-decoy-file', 'error'],
      ['identity-uid', 'error'],
      ['cpu-quota', 'warning'],
      ['hostile-bytes', 'note'],
      ['disk-fill', 'warning'],
    ]);
    for (const r of run.results) expect(run.tool.driver.rules[r.ruleIndex]?.id).toBe(r.ruleId);
  });

  it("a result says the reason and the outside evidence, and is located at its probe's spec and at backend and policy item", () => {
    const run = mixed().runs[0]!;
    const first = run.results[0]!;
    expect(first.message.text).toContain('CROSSED: secret-decoy-file reason');
    expect(first.message.text).toContain('canary-scan @ stdout: decoy value came out of the box');
    expect(first.message.text).not.toContain('the box says HELD');
    const specLine =
      readFileSync(join(packageRoot(), 'probes', 'secret-decoy-file', 'probe.ts'), 'utf8')
        .split('\n')
        .indexOf("  id: 'secret-decoy-file',") + 1;
    expect(specLine).toBeGreaterThan(1);
    expect(first.locations[0]?.physicalLocation).toEqual({
      artifactLocation: { uri: 'probes/secret-decoy-file/probe.ts' },
      region: { startLine: specLine, startColumn: 7, endLine: specLine, endColumn: 26 },
    });
    expect(first.locations[0]?.logicalLocations[0]).toMatchObject({ name: 'files.hostPaths', fullyQualifiedName: 'fake/files.hostPaths' });
    // Every result has a physical location (GitHub code scanning shows none without one): test/unit/sarif-github.test.ts.
    expect(run.results.every((r) => r.locations[0]?.physicalLocation.artifactLocation.uri === `probes/${r.ruleId}/probe.ts`)).toBe(true);
    expect(run.automationDetails.id).toBe('sandcheck/fake/');
  });

  it('a waived crossing stays in the log, suppressed with the waiver (and the log still validates)', () => {
    const log = sarifOf([
      result('secret-decoy-file', 'crossed', 'critical', { waiver: { reason: 'vendor fix due', owner: 'ana', expires: '2099-01-01' } }),
      result('cpu-quota', 'crossed', 'medium'),
    ]);
    expect(validateSarif(log), JSON.stringify(validateSarif.errors)).toBe(true);
    const [waived, plain] = log.runs[0]!.results;
    expect(waived?.suppressions).toEqual([{ kind: 'external', status: 'accepted', justification: 'waived: vendor fix due (owner ana, expires 2099-01-01)' }]);
    expect(plain?.suppressions).toBeUndefined();
  });

  it('control characters in a reason reach the log escaped', () => {
    const run = sarifOf([result('secret-decoy-file', 'crossed', 'critical', { reason: 'x\u001b[2Jy\u202ez' })]).runs[0]!;
    expect(run.results[0]?.message.text).not.toMatch(/[\u001b\u202e]/);
    expect(run.results[0]?.message.text).toContain('\\u202e');
  });
});
