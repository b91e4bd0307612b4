import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { AdapterCheckReportSchema, type AdapterCheckReport, type CheckResult } from '../../adapter/check/model.js';
import { checkReportJunit, checkReportText } from '../../adapter/check/report.js';

const check = (over: Partial<CheckResult> & Pick<CheckResult, 'id' | 'status'>): CheckResult => ({
  title: 't',
  blocking: true,
  blockingReason: 'every adapter',
  detail: 'd',
  durationMs: 1,
  ...over,
});

const report = (checks: CheckResult[]): AdapterCheckReport => ({
  version: 1,
  adapterApiVersion: '1.0.0',
  runId: 'rcheck01',
  backend: { name: 'mine', description: 'x', source: './mine.mjs' },
  policy: 'ci',
  startedAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:00:01.000Z',
  checks,
  notes: [],
  summary: {
    passed: checks.filter((c) => c.status === 'pass').length,
    failed: checks.filter((c) => c.status === 'fail').length,
    skipped: checks.filter((c) => c.status === 'skip').length,
    blockingFailed: checks.filter((c) => c.blocking && c.status === 'fail').map((c) => c.id),
  },
});

describe('adapter check report', () => {
  const r = report([
    check({ id: 'exec.abort', status: 'fail', detail: 'exec() had not returned\u001b[31m ]]> \u0000' }),
    check({ id: 'files.modes', status: 'fail', blocking: false, blockingReason: 'advisory' }),
    check({ id: 'exec.lab-netns', status: 'skip', detail: 'not visible here' }),
    check({ id: 'exec.argv', status: 'pass' }),
  ]);

  it('JUnit: blocking and advisory checks in separate suites; failures, skips and hostile text handled', () => {
    const xml = checkReportJunit(r);
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toContain('\u001b');
    const doc = new XMLParser({ ignoreAttributes: false }).parse(xml) as {
      testsuites: { testsuite: { '@_name': string; '@_failures': string; '@_skipped': string }[] };
    };
    const suites = Object.fromEntries(doc.testsuites.testsuite.map((s) => [s['@_name'], s]));
    expect(suites['mine.adapter']).toMatchObject({ '@_failures': '1', '@_skipped': '1' });
    expect(suites['mine.adapter.advisory']).toMatchObject({ '@_failures': '1' });
  });

  it('text names the blocking failures; the JSON shape is the published schema', () => {
    expect(checkReportText(r)).toMatch(/BLOCKING checks failed: exec\.abort;/);
    expect(checkReportText(report([check({ id: 'exec.argv', status: 'pass' })]))).toMatch(/every blocking check passed/);
    expect(AdapterCheckReportSchema.safeParse(r).success).toBe(true);
    expect(AdapterCheckReportSchema.safeParse({ ...r, checks: [{ ...r.checks[0], id: 'no.such.check' }] }).success).toBe(false);
  });

  it('a check passed only in part says so in text, JSON and JUnit: the part not applicable is never shown as passed', () => {
    const why = 'writing half: the backend declares that the box writes no results: read-only mode';
    const partly = { ...report([check({ id: 'files.nested', status: 'pass', detail: 'read', notApplicable: why })]) };
    partly.summary = { ...partly.summary, partlyNotApplicable: ['files.nested'] };
    expect(AdapterCheckReportSchema.safeParse(partly).success).toBe(true);
    const text = checkReportText(partly);
    expect(text).toContain(`[NOT APPLICABLE in part: ${why}]`);
    expect(text).toMatch(/1 passed \(files\.nested only in part: the rest not applicable\)/);
    expect(checkReportText(report([check({ id: 'files.nested', status: 'pass' })]))).not.toMatch(/NOT APPLICABLE/);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(checkReportJunit(partly)) as {
      testsuites: { testsuite: { testcase: { properties: { property: { '@_name': string; '@_value': string }[] } } } };
    };
    expect(doc.testsuites.testsuite.testcase.properties.property).toContainEqual({ '@_name': 'not-applicable', '@_value': why });
  });
});
