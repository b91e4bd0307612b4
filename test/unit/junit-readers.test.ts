import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import type { RunEnvironment } from '../../model/environment.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { securityScorecard, taskScorecard } from '../../harness/scorecard-builder.js';
import { securityJunit, taskJunit } from '../../reports/junit-report.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

const meta = { runId: 'rjunit0001', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
const backend = new FakeBackend(() => ({}));
const environment: RunEnvironment = { sandcheckVersion: '0.0.0', node: 'v20', kernel: '6', cgroupMode: 'v2', policySha256: '0'.repeat(64), tools: [] };

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

  it('no testcase file or properties and no testsuites@skipped; the per-case facts are the first line of system-out', () => {
    const doc = parse(securityXml());
    expect(doc.testsuites).not.toHaveProperty('@skipped');
    for (const s of doc.testsuites.testsuite) {
      for (const c of s.testcase) {
        expect(c).not.toHaveProperty('@file');
        expect(c).not.toHaveProperty('properties');
      }
    }
    const byId = cases(securityXml());
    const out = (id: string) => text(byId.get(id)?.['system-out']).split('\n')[0];
    expect(out('secret-decoy-file')).toBe(
      'verdict: crossed, severity: critical, policy item: files.hostPaths, ATT&CK: T1552.001 T1083, CWE: CWE-552 CWE-200, spec: probes/secret-decoy-file/probe.ts',
    );
    expect(out('read-only-input')).toMatch(/^verdict: not-applicable, .*, spec: probes\/read-only-input\/probe\.ts$/);
    expect(text(byId.get('read-only-input')?.['system-out'])).toContain('N/A: no lab on this machine');
    // A waived crossing: the waiver in <skipped message> and in system-out, after the same facts line.
    expect((byId.get('zip-slip')?.['skipped'] as Node)['@message']).toBe('waived: tracked in #12 (sec-team, expires 2099-01-01)');
    expect(out('zip-slip')).toBe('waived: tracked in #12 (sec-team, expires 2099-01-01)');
    expect(text(byId.get('zip-slip')?.['system-out'])).toMatch(/\nverdict: crossed, .*spec: probes\/zip-slip\/probe\.ts\nCROSSED: zip-slip reason/);
    expect(text(cases(taskXml()).get('average-correct')?.['system-out']).split('\n')[0]).toBe(
      'expected: accept, verdict: rejected, outcome: unexpected, attempts: 0, reproducible: not replayed, spec: tasks/average-correct/probe.ts',
    );
  });

  it('a suite opens with a handful of properties (backend, label, policy, run id, the counts, where the environment is), not one per case', () => {
    const labelled = securityJunit(
      withThreatMapping({
        ...securityScorecard(backend, FAST_POLICY, meta, [result('secret-decoy-file', 'crossed'), result('export-hardlink', 'held')]),
        environment: { ...environment, label: 'rc1' },
      }),
    );
    for (const [xml, kind] of [
      [securityXml(), 'security'],
      [taskXml(), 'task'],
      [labelled, 'security'],
    ] as const) {
      for (const s of parse(xml).testsuites.testsuite) {
        const props = s.properties.property.map((p) => [p['@name'], p['@value']] as const);
        expect(props.length, String(s['@name'])).toBeLessThanOrEqual(6);
        const byName = new Map(props);
        expect(byName.get('backend')).toBe('fake');
        expect(byName.get('policy')).toBe('unit');
        expect(byName.get('run.id')).toBe('rjunit0001');
        expect(byName.get('environment')).toBe(`${kind}.json#/environment`);
        expect(byName.has('run.incomplete')).toBe(false);
      }
    }
    const props = (xml: string) => new Map(parse(xml).testsuites.testsuite[0]!.properties.property.map((p) => [p['@name'], p['@value']]));
    expect(props(securityXml()).get('summary')).toBe('held 1, crossed 2, unenforced 1, inconclusive 1, not-applicable 1, waived 1 (of 6)');
    expect(props(taskXml()).get('summary')).toBe('as-expected 0, unexpected 1, error 0, not-applicable 0, non-reproducible 0 (of 1)');
    expect(props(labelled).get('label')).toBe('rc1');
  });

  it('the root <testsuites> carries the total time of its suites; a skipped count only per suite', () => {
    const timed = (ms: number[]) =>
      securityJunit(
        withThreatMapping(
          securityScorecard(
            backend,
            FAST_POLICY,
            meta,
            ms.map((durationMs, i) =>
              result(['secret-decoy-file', 'fork-bomb', 'read-only-input'][i]!, i === 2 ? 'not-applicable' : 'held', {
                durationMs,
                ...(i === 1 ? { category: 'resources' } : {}),
              }),
            ),
          ),
        ),
      );
    const doc = parse(timed([1500, 250, 1]));
    expect(doc.testsuites['@time']).toBe('1.751');
    expect(doc.testsuites).not.toHaveProperty('@skipped');
    const suites = doc.testsuites.testsuite;
    expect(suites.map((s) => [s['@name'], s['@time'], s['@skipped']])).toEqual([
      ['fake.files', '1.501', '1'],
      ['fake.resources', '0.25', '0'],
    ]);
    expect(parse(taskXml()).testsuites['@time']).toBe('0.001');
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
      // Why the root has no skipped count: junit-10.xsd refuses it (each <testsuite> carries its own).
      expect(lint('root-skipped.xml', securityXml().replace('<testsuites ', '<testsuites skipped="1" '))).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
