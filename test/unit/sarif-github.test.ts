/**
 * security.sarif against what GitHub code scanning documents for an upload, rule by rule, beyond the SARIF 2.1.0
 * schema (test/unit/sarif.test.ts). Sources, as of this test (github/docs):
 *   [support] "SARIF support for code scanning" (content/code-security/code-scanning/integrating-with-code-scanning/
 *             sarif-support-for-code-scanning.md): the required properties of each object, the runAutomationDetails
 *             category, fingerprints, relative paths;
 *   [limits]  its table of limits (data/reusables/code-scanning/sarif-limits.md, also in "SARIF results exceed one or
 *             more limits"): runs per file, results and rules per run, locations per result, tags per rule; and the
 *             10 MB limit on the gzip-compressed file ([support], "Validating your SARIF file").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import type { RunEnvironment } from '../../model/environment.js';
import type { SecurityResult, SecurityScorecard } from '../../model/scorecard.js';
import { securityScorecard, type BackendFacts } from '../../harness/scorecard-builder.js';
import { evidenceFingerprint } from '../../harness/waivers.js';
import { regionOfId, sarifText, securitySarif, specRegionInPackage, type SarifLog } from '../../reports/sarif.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { allowlistSuite } from '../../suites/allowlist.js';
import { securitySuite } from '../../suites/security.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

const environment: RunEnvironment = { sandcheckVersion: '0.1.0', node: 'v20', kernel: '6', cgroupMode: 'v2', policySha256: '0'.repeat(64), tools: [] };

function result(
  id: string,
  verdict: SecurityResult['verdict'],
  severity: SecurityResult['severity'],
  detail = 'decoy value came out of the box',
): SecurityResult {
  return {
    id,
    title: `${id} title`,
    category: 'files',
    policyItem: 'files.hostPaths',
    severity,
    verdict,
    reason: `${id} reason. More detail follows.`,
    remediation: `${id} remedy`,
    evidence: [{ source: 'outside', witness: 'canary-scan', where: 'stdout', detail }],
    durationMs: 1,
  };
}

function card(opts: { backend?: string; label?: string; runId?: string; results?: SecurityResult[] } = {}): SecurityScorecard {
  const meta = { runId: opts.runId ?? 'rgithub001', startedAt: new Date(0), finishedAt: new Date(1000), interrupted: false };
  const backend: BackendFacts = { name: opts.backend ?? 'fake', description: 'a fabricated backend', isolation: 'sandbox', enforces: [] };
  const c = securityScorecard(backend, FAST_POLICY, meta, opts.results ?? mixedResults());
  return withThreatMapping({ ...c, environment: { ...environment, ...(opts.label ? { label: opts.label } : {}) } });
}

/** Crossings, an unenforced item and an inconclusive probe (and what is no finding: held, not-applicable). */
const mixedResults = (detail?: string): SecurityResult[] => [
  result('secret-decoy-file', 'crossed', 'critical', detail),
  result('fork-bomb', 'crossed', 'medium', detail),
  result('identity-capabilities', 'unenforced', 'high', detail),
  result('disk-fill', 'inconclusive', 'medium', detail),
  result('hostile-bytes', 'crossed', 'low', detail),
  result('residue', 'held', 'medium', detail),
  result('dns-exfil', 'not-applicable', 'high', detail),
];

const onlyRun = (log: SarifLog) => {
  expect(log.runs).toHaveLength(1);
  return log.runs[0]!;
};
const nonEmpty = (s: unknown): boolean => typeof s === 'string' && s.length > 0;

describe('security.sarif meets GitHub code scanning upload requirements', () => {
  const log = securitySarif(card({ label: 'rc1' }));
  const run = onlyRun(log);

  it('sarifLog and run: $schema, version 2.1.0, runs; tool.driver with name and rules; results', () => {
    // [support] sarifLog object: `$schema` required (the 2.1.0 schema URI), `version` required and only 2.1.0, `runs[]` required.
    expect(log.$schema).toMatch(/^https:\/\/.*sarif-schema-2\.1\.0\.json$/);
    expect(log.version).toBe('2.1.0');
    // [limits] Runs per file: at most 20.
    expect(log.runs.length).toBeGreaterThanOrEqual(1);
    expect(log.runs.length).toBeLessThanOrEqual(20);
    // [support] run object: `tool.driver` required; toolComponent: `name` required, `rules[]` required.
    expect(nonEmpty(run.tool.driver.name)).toBe(true);
    expect(Array.isArray(run.tool.driver.rules)).toBe(true);
    // [support] toolComponent `semanticVersion`: Semantic Versioning 2.0 (used instead of `version` when present).
    expect(run.tool.driver.semanticVersion).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/);
    // [support] run object: `results[]` required.
    expect(Array.isArray(run.results)).toBe(true);
    // [limits] Results per run: at most 25,000 (5,000 shown); rules per run: at most 25,000.
    expect(run.results.length).toBeLessThanOrEqual(5000);
    expect(run.tool.driver.rules.length).toBeLessThanOrEqual(25_000);
    expect(run.results.map((r) => [r.ruleId, r.properties['verdict']])).toEqual([
      ['secret-decoy-file', 'crossed'],
      ['fork-bomb', 'crossed'],
      ['identity-capabilities', 'unenforced'],
      ['disk-fill', 'inconclusive'],
      ['hostile-bytes', 'crossed'],
    ]);
  });

  it('reportingDescriptor: id; name ≤ 255; short and full description ≤ 1024; help.text; level; tags; security-severity; precision', () => {
    for (const rule of run.tool.driver.rules) {
      // [support] reportingDescriptor `id` required. GitHub documents no length for it; ids stay within the 255 of `name`.
      expect(nonEmpty(rule.id)).toBe(true);
      expect(rule.id.length).toBeLessThanOrEqual(255);
      // [support] `name` optional, "Limited to 255 characters".
      expect(rule.name.length).toBeGreaterThan(0);
      expect(rule.name.length).toBeLessThanOrEqual(255);
      // [support] `shortDescription.text` and `fullDescription.text` required, each "Limited to 1024 characters".
      for (const d of [rule.shortDescription.text, rule.fullDescription.text]) {
        expect(nonEmpty(d)).toBe(true);
        expect(d.length).toBeLessThanOrEqual(1024);
      }
      // [support] `help.text` required.
      expect(nonEmpty(rule.help.text)).toBe(true);
      // [support] `defaultConfiguration.level`: one of note, warning, error.
      expect(['note', 'warning', 'error']).toContain(rule.defaultConfiguration.level);
      // [limits] Tags per rule: at most 20, only 10 shown. [support] `security` tag for security rules.
      expect(rule.properties.tags!.length).toBeLessThanOrEqual(10);
      expect(rule.properties.tags).toContain('security');
      // [support] `properties.security-severity`: a string, a score greater than 0.0 up to 10.0.
      const score = Number(rule.properties['security-severity']);
      expect(typeof rule.properties['security-severity']).toBe('string');
      expect(score > 0 && score <= 10).toBe(true);
      // [support] `properties.precision`: one of very-high, high, medium, low.
      expect(['very-high', 'high', 'medium', 'low']).toContain(rule.properties['precision']);
    }
  });

  it('every rule of every built-in probe keeps within 10 tags and the description limits', () => {
    const all = [...securitySuite, ...allowlistSuite].map((p) => ({ ...result(p.id, 'crossed', p.severity), category: p.category, title: p.title }));
    const rules = onlyRun(securitySarif(card({ results: all }))).tool.driver.rules;
    expect(rules).toHaveLength(all.length);
    for (const rule of rules) {
      // [limits] Tags per rule: 20 at most, 10 shown (host-search maps to 3 techniques and 3 CWEs: 11 tags before the cap).
      expect(rule.properties.tags!.length, rule.id).toBeLessThanOrEqual(10);
      expect(rule.properties.tags, rule.id).toEqual(expect.arrayContaining(['security']));
      // [support] name ≤ 255, descriptions ≤ 1024.
      expect(rule.name.length).toBeLessThanOrEqual(255);
      expect(rule.fullDescription.text.length).toBeLessThanOrEqual(1024);
    }
  });

  it('result: message.text, one location with physicalLocation (relative uri and a full region), partialFingerprints, a rule to point at', () => {
    const rules = run.tool.driver.rules;
    for (const r of run.results) {
      // [support] result `ruleId`: the rule's `reportingDescriptor.id`; `ruleIndex` within 0 … 2^63 - 1, into `rules`.
      expect(rules[r.ruleIndex]?.id).toBe(r.ruleId);
      // [support] result `level`: note, warning or error.
      expect(['note', 'warning', 'error']).toContain(r.level);
      // [support] `message.text` required (shown as the alert's title; its first sentence when space is short).
      expect(nonEmpty(r.message.text)).toBe(true);
      expect(r.message.text.split(/\.\s/)[0]).toMatch(/^(CROSSED|UNENFORCED|INCONCLUSIVE): \S+ reason$/);
      // [support] `locations[]` required, up to 10 ("at least one location is required … to display a result"; only the
      // first is used). [limits] Locations per result: at most 1,000.
      expect(r.locations.length).toBeGreaterThanOrEqual(1);
      expect(r.locations.length).toBeLessThanOrEqual(10);
      const physical = r.locations[0]!.physicalLocation;
      // [support] location `physicalLocation` required; physicalLocation `artifactLocation.uri` required, best "a relative
      // path from the root of the GitHub repository", consistent across runs ("Reporting consistent filepaths").
      expect(physical.artifactLocation.uri).toBe(`probes/${r.ruleId}/probe.ts`);
      expect(physical.artifactLocation.uri).not.toMatch(/^[a-z][a-z0-9+.-]*:|^\/|(^|\/)\.\.(\/|$)/i);
      // [support] physicalLocation `region.startLine`, `startColumn`, `endLine`, `endColumn` required (1-based; the end
      // column is the one after the region).
      const { startLine, startColumn, endLine, endColumn } = physical.region;
      for (const n of [startLine, startColumn, endLine, endColumn]) expect(Number.isInteger(n) && n >= 1).toBe(true);
      expect(endLine).toBeGreaterThanOrEqual(startLine);
      if (endLine === startLine) expect(endColumn).toBeGreaterThanOrEqual(startColumn);
      // The logical location (backend / policy item) is kept beside it.
      expect(r.locations[0]!.logicalLocations[0]).toMatchObject({ name: 'files.hostPaths', fullyQualifiedName: 'fake/files.hostPaths' });
      // [support] `partialFingerprints` required; "Code scanning only uses the primaryLocationLineHash".
      expect(Object.keys(r.partialFingerprints)).toEqual(['primaryLocationLineHash']);
      expect(r.partialFingerprints['primaryLocationLineHash']).toMatch(/^[0-9a-f]{16}:1$/);
    }
    // No two results of one run share a fingerprint.
    expect(new Set(run.results.map((r) => r.partialFingerprints['primaryLocationLineHash'])).size).toBe(run.results.length);
  });

  it('each result points at the line of its spec that names the probe, read from the package at report time', () => {
    for (const r of run.results) {
      const source = readFileSync(join(packageRoot(), r.locations[0]!.physicalLocation.artifactLocation.uri), 'utf8');
      const { startLine, startColumn, endColumn } = r.locations[0]!.physicalLocation.region;
      expect(source.split('\n')[startLine - 1]!.slice(startColumn - 1, endColumn - 1), r.ruleId).toBe(`'${r.ruleId}'`);
    }
    expect(specRegionInPackage('fork-bomb')).toMatchObject({ startLine: 8 });
    // A factory call names the id too; an id no spec names, or one that is no folder name, points at the first line.
    expect(regionOfId("export const zipSlip = exportProbe('zip-slip', 'zip slip', 'zip-slip');\n", 'zip-slip')).toEqual({
      startLine: 1,
      startColumn: 36,
      endLine: 1,
      endColumn: 46,
    });
    expect(specRegionInPackage('no-such-probe')).toEqual({ startLine: 1, startColumn: 1, endLine: 1, endColumn: 1 });
    expect(specRegionInPackage('../../package.json')).toEqual({ startLine: 1, startColumn: 1, endLine: 1, endColumn: 1 });
    const odd = onlyRun(securitySarif(card({ results: [result('../../etc/passwd', 'crossed', 'high')] }))).results[0]!;
    expect(odd.locations[0]!.physicalLocation.artifactLocation.uri).toBe('probes/______etc_passwd/probe.ts');
  });

  it('fingerprints: the same finding keeps its value across runs; another probe, backend or label changes it', () => {
    const fp = (log: SarifLog) => new Map(onlyRun(log).results.map((r) => [r.ruleId, r.partialFingerprints['primaryLocationLineHash']]));
    const first = fp(securitySarif(card({ label: 'rc1', runId: 'rfirst0001' })));
    // Another run: another run id, other times, other evidence text, the crossing waived: the same alert.
    const again = card({ label: 'rc1', runId: 'rsecond002', results: mixedResults('decoy value came out on stderr, 2 lines') });
    again.results[0] = { ...again.results[0]!, waiver: { reason: 'vendor fix due', owner: 'ana', expires: '2099-01-01' } };
    expect(fp(securitySarif({ ...again, run: { ...again.run, startedAt: '2030-01-01T00:00:00.000Z' } }))).toEqual(first);
    const otherBackend = fp(securitySarif(card({ label: 'rc1', backend: 'bwrap' })));
    const otherLabel = fp(securitySarif(card({ label: 'rc2' })));
    const noLabel = fp(securitySarif(card()));
    for (const other of [otherBackend, otherLabel, noLabel]) for (const [id, value] of first) expect(other.get(id), id).not.toBe(value);
  });

  it('runAutomationDetails.id: category sandcheck/<backend>[/<label>], no run id, so runs of one backend and label replace each other', () => {
    // [support] "`id` is interpreted as `category/run-id` … `category` is everything in the string until the last
    // forward slash"; an upload with the same category and tool replaces the earlier results ("Uploading more than one
    // SARIF file for a commit").
    const category = (log: SarifLog) => {
      const id = onlyRun(log).automationDetails.id;
      return { category: id.slice(0, id.lastIndexOf('/')), runId: id.slice(id.lastIndexOf('/') + 1) };
    };
    expect(category(securitySarif(card({ label: 'rc1' })))).toEqual({ category: 'sandcheck/fake/rc1', runId: '' });
    expect(category(securitySarif(card()))).toEqual({ category: 'sandcheck/fake', runId: '' });
    expect(category(securitySarif(card({ backend: 'bwrap', runId: 'ranother01' })))).toEqual({ category: 'sandcheck/bwrap', runId: '' });
    // The run id stays in the run's properties.
    expect(run.properties).toMatchObject({ runId: 'rgithub001', backend: 'fake', label: 'rc1', policy: 'unit' });
  });

  it('a crossing carries the fingerprint a waiver takes; the file stays far under 10 MB gzip-compressed', () => {
    const first = run.results[0]!;
    expect(first.properties['waiverFingerprint']).toBe(evidenceFingerprint(result('secret-decoy-file', 'crossed', 'critical')));
    expect(run.results.find((r) => r.ruleId === 'disk-fill')?.properties).not.toHaveProperty('waiverFingerprint');
    // [support] "For each gzip-compressed SARIF file, SARIF upload supports a maximum size of 10 MB."
    const all = [...securitySuite, ...allowlistSuite].map((p) => ({ ...result(p.id, 'crossed', p.severity), reason: 'x'.repeat(64 * 1024) }));
    expect(gzipSync(sarifText(securitySarif(card({ results: all })))).length).toBeLessThan(10 * 1024 * 1024);
  });
});
