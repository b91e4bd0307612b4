import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import type { Waiver } from '../../model/waiver.js';
import { evidenceFingerprint } from '../../harness/waivers.js';
import { classifyRuns, classifySecurity, classifyTask, gateReport, GateReportSchema, type Change } from '../../reports/gate.js';
import { gateMarkdown, gateText, waiverLines } from '../../reports/gate-render.js';
import { fabricatedRun, secResult, taskResult } from './gate-fixtures.js';

const VERDICTS = ['held', 'crossed', 'unenforced', 'inconclusive', 'not-applicable'] as const;
const TODAY = '2026-06-15';

const classOf = (changes: Change[], kind: Change['kind'], id: string) => changes.find((c) => c.kind === kind && c.id === id)?.class;

describe('the gate classifier', () => {
  it('security verdicts: exactly the listed pairs are regressions, their reverses improvements, the rest other changes', () => {
    const regressions = new Set([
      'held>crossed',
      'unenforced>crossed',
      'inconclusive>crossed',
      'not-applicable>crossed',
      'held>inconclusive',
      'held>unenforced',
      'not-applicable>unenforced',
    ]);
    const improvements = new Set([...regressions].map((p) => p.split('>').reverse().join('>')));
    for (const b of VERDICTS) {
      for (const h of VERDICTS) {
        const pair = `${b}>${h}`;
        const want = b === h ? 'unchanged' : regressions.has(pair) ? 'regression' : improvements.has(pair) ? 'improvement' : 'changed';
        expect(classifySecurity(b, h), pair).toBe(want);
      }
    }
    expect(classifySecurity('held', null)).toBe('regression');
    expect(classifySecurity(null, 'crossed')).toBe('regression');
    expect(classifySecurity(null, 'unenforced')).toBe('regression');
    expect(classifySecurity(null, 'held')).toBe('changed');
  });

  it('task outcomes: as-expected → unexpected/error is a regression, missing in head too', () => {
    expect(classifyTask('as-expected', 'unexpected')).toBe('regression');
    expect(classifyTask('as-expected', 'error')).toBe('regression');
    expect(classifyTask('unexpected', 'as-expected')).toBe('improvement');
    expect(classifyTask('error', 'unexpected')).toBe('changed');
    expect(classifyTask('as-expected', null)).toBe('regression');
    expect(classifyTask('as-expected', 'as-expected')).toBe('unchanged');
  });

  it('classifies every probe, case and claim between two runs', () => {
    const base = fabricatedRun(
      'base',
      [secResult('a', 'held'), secResult('b', 'held'), secResult('c', 'crossed'), secResult('d', 'held'), secResult('e', 'not-applicable')],
      [taskResult('t1', 'as-expected'), taskResult('t2', 'unexpected')],
      { enforces: ['x', 'y'] },
    );
    const head = fabricatedRun(
      'head',
      [secResult('a', 'crossed'), secResult('b', 'held'), secResult('c', 'held'), secResult('e', 'unenforced'), secResult('f', 'crossed')],
      [taskResult('t1', 'error'), taskResult('t2', 'as-expected')],
      { enforces: ['y', 'z'] },
    );
    const changes = classifyRuns(base, head);
    expect(
      changes
        .filter((c) => c.class === 'regression')
        .map((c) => `${c.kind}:${c.id}`)
        .sort(),
    ).toEqual(['claim:x', 'security:a', 'security:d', 'security:e', 'security:f', 'task:t1']);
    expect(
      changes
        .filter((c) => c.class === 'improvement')
        .map((c) => `${c.kind}:${c.id}`)
        .sort(),
    ).toEqual(['claim:z', 'security:c', 'task:t2']);
    expect(classOf(changes, 'security', 'b')).toBe('unchanged');
    expect(changes.find((c) => c.id === 'd')).toMatchObject({ base: 'held', head: null });
    const report = gateReport(base, head, [], TODAY);
    expect(report.passed).toBe(false);
    expect(report.summary).toMatchObject({ regressions: 6, improvements: 3, unchanged: 2, waived: 0 });
    expect(GateReportSchema.safeParse(report).success).toBe(true);
    // The published JSON Schema (npm run schema) accepts the report too, and refuses a broken one.
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
    formats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(join(packageRoot(), 'reports', 'schema', 'gate-report.schema.json'), 'utf8')) as object);
    expect(validate(JSON.parse(JSON.stringify(report))), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...report, passed: 'yes' })).toBe(false);
    // Not-applicable counts sit beside the totals in every summary.
    expect(gateText(report)).toMatch(/base bwrap \(unit\): 5 security: 3 held, 1 crossed, 0 unenforced, 0 inconclusive, 1 not applicable/);
  });

  it('identical runs pass with nothing but unchanged rows', () => {
    const run = fabricatedRun('same', [secResult('a', 'held'), secResult('c', 'crossed')], [taskResult('t', 'as-expected')], { enforces: ['x'] });
    const report = gateReport(run, run, [], TODAY);
    expect(report.passed).toBe(true);
    expect(report.summary).toMatchObject({ regressions: 0, improvements: 0, changed: 0, unchanged: 4 });
    expect(gateText(report)).toContain('no verdict changed');
  });
});

describe('waivers in the gate', () => {
  const base = fabricatedRun('base', [secResult('fork-bomb', 'held', { policyItem: 'resources.processes' }), secResult('uid', 'held')], [], {
    enforces: ['resources.processes'],
  });
  const head = fabricatedRun('head', [secResult('fork-bomb', 'crossed', { policyItem: 'resources.processes' }), secResult('uid', 'held')], [], {
    enforces: [],
  });
  const waiver = (w: Partial<Waiver>): Waiver => ({
    probe: 'fork-bomb',
    reason: 'pids limit off while we migrate',
    owner: 'alice',
    expires: '2026-12-31',
    ...w,
  });

  it('a live waiver accepts the regression and the dropped claim of the item its probe tests', () => {
    const report = gateReport(base, head, [waiver({})], TODAY);
    expect(report.passed).toBe(true);
    expect(report.summary).toMatchObject({ regressions: 0, waived: 2, expiredWaivers: 0, unusedWaivers: 0 });
    expect(report.changes.find((c) => c.kind === 'claim')?.waiver).toMatchObject({ owner: 'alice' });
    expect(report.waivers[0]).toMatchObject({ status: 'used', matched: ['fork-bomb'] });
  });

  it('expires is the last live day: the day after, the gate fails and names the waiver', () => {
    expect(gateReport(base, head, [waiver({ expires: TODAY })], TODAY).passed).toBe(true);
    const report = gateReport(base, head, [waiver({ expires: '2026-06-14' })], TODAY);
    expect(report.passed).toBe(false);
    expect(report.summary).toMatchObject({ regressions: 2, waived: 0, expiredWaivers: 1 });
    expect(waiverLines(report).join('\n')).toContain('waiver for fork-bomb expired on 2026-06-14');
    expect(report.changes.find((c) => c.id === 'fork-bomb')?.expiredWaiver?.expires).toBe('2026-06-14');
  });

  it('an expired waiver for a standing crossing fails the gate even though nothing regressed', () => {
    const report = gateReport(head, head, [waiver({ expires: '2020-01-01' })], TODAY);
    expect(report.summary.regressions).toBe(0);
    expect(report.passed).toBe(false);
  });

  it('the backend filter: a waiver for another backend matches nothing and is reported unused', () => {
    const report = gateReport(base, head, [waiver({ backend: 'docker-hardened' })], TODAY);
    expect(report.passed).toBe(false);
    expect(report.waivers[0]?.status).toBe('unused');
    expect(gateReport(base, head, [waiver({ backend: 'bwrap' })], TODAY).passed).toBe(true);
  });

  it('a fingerprint accepts only that evidence', () => {
    const crossed = head.security.results.find((r) => r.id === 'fork-bomb');
    if (!crossed) throw new Error('fixture');
    const fp = evidenceFingerprint(crossed);
    const report = gateReport(base, head, [waiver({ fingerprint: fp })], TODAY);
    expect(report.changes.find((c) => c.id === 'fork-bomb')?.waiver).toBeDefined();
    expect(report.passed).toBe(true);
    const other = fabricatedRun(
      'head2',
      [
        secResult('fork-bomb', 'crossed', {
          policyItem: 'resources.processes',
          evidence: [{ source: 'outside', witness: 'canary-scan', where: 'stdout', detail: 'decoy value came out' }],
        }),
      ],
      [],
      { enforces: [] },
    );
    const refused = gateReport(base, other, [waiver({ fingerprint: fp })], TODAY);
    expect(refused.passed).toBe(false);
    expect(refused.waivers[0]?.status).toBe('unused');
  });

  it('an unused waiver is reported, and a standing crossing keeps its waiver in use', () => {
    const report = gateReport(base, head, [waiver({}), waiver({ probe: 'memory-bomb', owner: 'bob' })], TODAY);
    expect(report.passed).toBe(true);
    expect(report.summary.unusedWaivers).toBe(1);
    expect(waiverLines(report).join('\n')).toMatch(/unused waiver for memory-bomb \(owner bob\)/);
    expect(gateReport(head, head, [waiver({})], TODAY).waivers[0]?.status).toBe('used');
  });

  it('the Markdown names waived and failing rows and folds the regression evidence', () => {
    const md = gateMarkdown(gateReport(base, head, [waiver({ expires: '2026-06-14' })], TODAY));
    expect(md).toContain('**FAILED**');
    expect(md).toMatch(/\| FAIL \(waiver expired on 2026-06-14\) \| security \| fork-bomb \| held \| crossed \|/);
    expect(md).toContain('<details><summary>evidence: fork-bomb (fingerprint');
  });
});

describe('evidence fingerprints', () => {
  const ev = (detail: string, witness = 'cgroup') =>
    secResult('p', 'crossed', {
      evidence: [
        { source: 'outside', witness, where: 'cgroup: sandcheck-r9f8e7d6c5b-1a2b3c4d', detail },
        { source: 'inside', witness: 'payload-report', detail: `run ${Math.random()}` },
      ],
    });
  it('ignore numbers, run ids and inside evidence, but not what was observed', () => {
    expect(evidenceFingerprint(ev('pids peak 64, refused 1'))).toBe(evidenceFingerprint(ev('pids peak 1024, refused 0')));
    expect(evidenceFingerprint(ev('pids peak 64'))).not.toBe(evidenceFingerprint(ev('pids peak 64', 'canary-scan')));
    expect(evidenceFingerprint(ev('pids peak 64'))).not.toBe(evidenceFingerprint(ev('memory peak 64')));
    expect(evidenceFingerprint(ev('x'))).toMatch(/^[0-9a-f]{16}$/);
  });
});
