import type { RunSuiteOutcome } from '../harness/run-suite.js';
import { waiverNotices } from '../harness/waivers.js';
import { appendStepSummary, runMarkdown } from '../reports/step-summary.js';

/** After `sandcheck run`: what the waivers did (expired ones are named: their crossings count) and the CI step summary. */
export async function afterRun(outcome: Pick<RunSuiteOutcome, 'security' | 'task' | 'waivers'>, write: (line: string) => void): Promise<void> {
  if (outcome.security.summary.waived)
    write(`waived: ${outcome.security.summary.waived} crossing(s) accepted by a live waiver (marked in the reports, not counted in the exit code)`);
  for (const line of waiverNotices(outcome.waivers ?? [])) write(line);
  const written = await appendStepSummary((max) => runMarkdown(outcome.security, outcome.task, max));
  if (written) write(`step summary appended to ${written}`);
}
