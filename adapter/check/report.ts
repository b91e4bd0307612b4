import { writeReportFile } from '../../core/atomic-write.js';
import { prepareOutDir } from '../../core/out-dir.js';
import { join } from 'node:path';
import * as junitModule from 'junit-report-builder';
import type { Builder as JUnitBuilder } from 'junit-report-builder';
import { cleanForReport } from '../../core/clean-text.js';
import type { AdapterCheckReport } from './model.js';

// The package is CommonJS with `module.exports = builder`, which its types describe as a default export.
const junit = (junitModule as unknown as { default: JUnitBuilder }).default;

const MARK = { pass: 'ok  ', fail: 'FAIL', skip: 'skip' } as const;

export function checkLine(r: AdapterCheckReport['checks'][number]): string {
  const kind = r.blocking ? 'blocking' : 'advisory';
  const na = r.notApplicable === undefined ? '' : ` [NOT APPLICABLE in part: ${cleanForReport(r.notApplicable.replace(/\s+/g, ' '), 300)}]`;
  const again =
    r.firstAttempt === undefined ? '' : ` [PASSED ON REPEAT; the first attempt failed: ${cleanForReport(r.firstAttempt.replace(/\s+/g, ' '), 300)}]`;
  return `${MARK[r.status]} ${r.id.padEnd(24)} ${kind.padEnd(8)} ${cleanForReport(r.detail.replace(/\s+/g, ' '), 400)}${na}${again}`;
}

export function checkReportText(report: AdapterCheckReport): string {
  const s = report.summary;
  const lines = [
    `adapter check: ${report.backend.name} (${report.backend.source}), adapter API ${report.adapterApiVersion}, policy ${report.policy}`,
    ...report.checks.map(checkLine),
    ...report.notes.map((n) => `note: ${n}`),
    `${s.passed} passed${s.partlyNotApplicable ? ` (${s.partlyNotApplicable.join(', ')} only in part: the rest not applicable)` : ''}${s.passedOnRepeat ? ` (${s.passedOnRepeat.join(', ')} only when repeated)` : ''}, ${s.failed} failed, ${s.skipped} skipped`,
    s.blockingFailed.length === 0
      ? 'every blocking check passed: sandcheck can trust this adapter to carry its verdicts'
      : `BLOCKING checks failed: ${s.blockingFailed.join(', ')}; \`sandcheck run\` refuses this adapter until they pass`,
  ];
  return lines.join('\n');
}

/** JUnit: blocking checks in `<backend>.adapter`, advisory ones in `<backend>.adapter.advisory`; a failure is a `<failure>`. */
export function checkReportJunit(report: AdapterCheckReport): string {
  const builder = junit.newBuilder();
  for (const blocking of [true, false]) {
    const checks = report.checks.filter((c) => c.blocking === blocking);
    if (checks.length === 0) continue;
    const name = `${report.backend.name}.adapter${blocking ? '' : '.advisory'}`;
    const suite = builder
      .testSuite()
      .name(name)
      .timestamp(report.startedAt)
      .property('adapter.api.version', report.adapterApiVersion)
      .property('policy', report.policy);
    for (const c of checks) {
      const tc = suite
        .testCase()
        .className(name)
        .name(`${c.id} ${c.title}`)
        .time(c.durationMs / 1000)
        .property('blocking', String(c.blocking))
        .property('blocking.reason', c.blockingReason);
      const detail = cleanForReport(c.detail);
      if (c.status === 'fail')
        tc.failure(cleanForReport(c.detail.replace(/\s+/g, ' '), 200), blocking ? 'AdapterCheckFailed' : 'AdvisoryCheckFailed').standardOutput(detail);
      else if (c.status === 'skip') tc.skipped().property('skip.reason', cleanForReport(c.detail, 200)).standardOutput(detail);
      else if (c.notApplicable !== undefined)
        tc.property('not-applicable', cleanForReport(c.notApplicable, 200)).standardOutput(
          `${detail}\nnot applicable in part: ${cleanForReport(c.notApplicable)}`,
        );
      else tc.standardOutput(detail);
      if (c.firstAttempt !== undefined) tc.property('first-attempt', cleanForReport(c.firstAttempt, 200));
    }
  }
  return builder.build();
}

/** adapter-check.json and adapter.junit.xml in `dir`. */
export async function writeCheckReports(dir: string, report: AdapterCheckReport): Promise<{ json: string; junit: string }> {
  await prepareOutDir(dir);
  const files = { json: join(dir, 'adapter-check.json'), junit: join(dir, 'adapter.junit.xml') };
  await writeReportFile(files.json, `${JSON.stringify(report, null, 2)}\n`);
  await writeReportFile(files.junit, checkReportJunit(report));
  return files;
}
