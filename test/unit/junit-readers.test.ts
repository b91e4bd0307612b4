import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { securityScorecard, taskScorecard } from '../../harness/scorecard-builder.js';
import { securityJunit, taskJunit } from '../../reports/junit-report.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

const meta = { runId: 'rjunit0001', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
const backend = new FakeBackend(() => ({}));

function result(id: string, verdict: SecurityResult['verdict'], extra: Partial<SecurityResult> = {}): SecurityResult {
  return {
    id,
    title: `${id} title`,
    category: 'files',
    policyItem: 'files.hostPaths',
    severity: 'critical',
    verdict,
    reason: `${id} reason`,
    remediation: 'remedy',
    evidence: [{ source: 'outside', witness: 'canary-scan', where: 'stdout', detail: 'decoy value came out' }],
    durationMs: 1,
    ...extra,
  };
}

const securityXml = (): string =>
  securityJunit(
    withThreatMapping(
      securityScorecard(backend, FAST_POLICY, meta, [
        result('secret-decoy-file', 'crossed'),
        result('daemon-socket', 'unenforced'),
        result('download-api-links', 'inconclusive'),
        result('read-only-input', 'not-applicable', { reason: 'no lab on this machine' }),
        result('export-hardlink', 'held'),
        result('zip-slip', 'crossed', { waiver: { reason: 'tracked in #12', owner: 'sec-team', expires: '2099-01-01' } }),
      ]),
    ),
  );

const task: TaskResult = {
  id: 'average-correct',
  title: 'a correct program',
  policyItem: 'task.correctness',
  expected: 'accept',
  verdict: 'rejected',
  outcome: 'unexpected',
  reason: 'the predicate refused it',
  evidence: [],
  artifacts: [],
  attempts: [],
  budget: { limitMs: 1000, elapsedMs: 10, maxAttempts: 4, exhausted: false },
  reproducible: null,
  durationMs: 1,
};
const taskXml = (): string => taskJunit(taskScorecard(backend, FAST_POLICY, meta, [task]));

type Node = Record<string, unknown>;
const parse = (xml: string) =>
  new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', isArray: (name) => ['testsuite', 'testcase', 'property'].includes(name) }).parse(xml) as {
    testsuites: Node & { testsuite: (Node & { testcase: Node[]; properties: { property: Node[] } })[] };
  };
const cases = (xml: string) =>
  new Map(
    parse(xml)
      .testsuites.testsuite.flatMap((s) => s.testcase)
      .map((c) => [String(c['@name']).split(' ')[0], c]),
  );
const text = (node: unknown): string => (typeof node === 'string' ? node : String((node as Node)['#text'] ?? ''));

describe('JUnit that every reader shows', () => {
  it('a crossed or unenforced probe carries its reason and outside evidence as the failure text', () => {
    const byId = cases(securityXml());
    for (const id of ['secret-decoy-file', 'daemon-socket']) {
      const failure = text(byId.get(id)?.['failure']);
      expect(failure, id).toContain(`${id} reason`);
      expect(failure, id).toContain('[outside] canary-scan @ stdout: decoy value came out');
    }
    expect(text(cases(taskXml()).get('average-correct')?.['failure'])).toContain('the predicate refused it');
  });

  it('a not-applicable probe is <skipped message="…"> with its reason', () => {
    const skipped = cases(securityXml()).get('read-only-input')?.['skipped'] as Node;
    expect(skipped['@message']).toBe('N/A: no lab on this machine');
  });

  it('no testcase file or properties and no testsuites@skipped; the per-case facts are testsuite properties', () => {
    const doc = parse(securityXml());
    expect(doc.testsuites).not.toHaveProperty('@skipped');
    for (const s of doc.testsuites.testsuite) {
      for (const c of s.testcase) {
        expect(c).not.toHaveProperty('@file');
        expect(c).not.toHaveProperty('properties');
      }
    }
    const props = new Map(doc.testsuites.testsuite.flatMap((s) => s.properties.property).map((p) => [p['@name'], p['@value']]));
    expect(props.get('secret-decoy-file.attack')).toBe('T1552.001 T1083');
    expect(props.get('secret-decoy-file.cwe')).toBe('CWE-552 CWE-200');
    expect(props.get('secret-decoy-file.file')).toBe('probes/secret-decoy-file/probe.ts');
    expect(props.get('read-only-input.skip.reason')).toBe('N/A: no lab on this machine');
    expect(props.get('backend')).toBe('fake');
    expect(String(cases(securityXml()).get('secret-decoy-file')?.['system-out'])).toContain('ATT&CK: T1552.001 T1083, CWE: CWE-552 CWE-200');
  });

  // The Jenkins xUnit junit-10.xsd is not vendored (no copy with a clear origin on npm was found): point
  // SANDCHECK_JUNIT10_XSD at one, or put it at test/fixtures/junit/junit-10.xsd, to validate against it.
  const xsd = process.env['SANDCHECK_JUNIT10_XSD'] ?? join(packageRoot(), 'test', 'fixtures', 'junit', 'junit-10.xsd');
  it.runIf(existsSync(xsd))('both files validate against junit-10.xsd with xmllint, and a testcase@file does not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandcheck-xsd-'));
    const lint = (name: string, xml: string): number => {
      writeFileSync(join(dir, name), xml);
      try {
        execFileSync('xmllint', ['--noout', '--schema', xsd, join(dir, name)], { stdio: 'pipe' });
        return 0;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('xmllint is missing: install libxml2-utils (npm run setup)', { cause: err });
        return (err as { status?: number }).status ?? 1;
      }
    };
    try {
      expect(lint('security.xml', securityXml())).toBe(0);
      expect(lint('task.xml', taskXml())).toBe(0);
      expect(lint('bad.xml', securityXml().replace('<testcase ', '<testcase file="x.ts" '))).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
