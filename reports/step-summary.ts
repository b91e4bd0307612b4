import { appendFile, stat } from 'node:fs/promises';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { evidenceFingerprint } from '../harness/waivers.js';
import { securityCounts, taskCounts } from './gate-render.js';
import { evidenceDetails, fitMarkdown, mdCell, mdRow, mdTableHead } from './markdown-text.js';
import { waivedMessage } from './junit-waived.js';

/** GitHub refuses a step summary over 1 MiB; what we append stays below it, with room to spare. */
export const STEP_SUMMARY_MAX_BYTES = 1024 * 1024 - 4096;

const truncationNote = (n: number): string => `_… ${n} more parts left out to stay under 1 MiB: the full results are in security.json and task.json._`;

/** A run's two cards as Markdown: counts per verdict, then only what needs a look (crossed, unenforced, inconclusive, waived, wrong task verdicts). */
export function runMarkdown(security: SecurityScorecard, task: TaskScorecard, maxBytes = STEP_SUMMARY_MAX_BYTES): string {
  const failed = security.results.some((r) => (r.verdict === 'crossed' || r.verdict === 'unenforced') && !r.waiver) || task.summary.unexpected > 0;
  const head = [
    `## sandcheck: ${mdCell(security.backend.name, 100)} under policy ${mdCell(security.policy.name, 100)}${failed ? ' — **FAILED**' : ''}\n\n`,
    `- ${mdCell(securityCounts(security.summary), 400)}\n`,
    `- ${mdCell(taskCounts(task.summary), 400)}\n`,
    security.run.incomplete ? `- **the run did not finish: results are incomplete**\n` : '',
    '\n',
  ];
  const notable = security.results.filter((r) => r.verdict === 'crossed' || r.verdict === 'unenforced' || r.verdict === 'inconclusive' || r.waiver);
  const wrongTasks = task.results.filter((r) => r.outcome !== 'as-expected');
  const rows = [
    ...notable.map((r) => mdRow([r.waiver ? `waived (${r.verdict})` : r.verdict, r.category, r.id, r.waiver ? waivedMessage(r.waiver) : r.reason])),
    ...wrongTasks.map((r) => mdRow([r.outcome, 'task', r.id, `expected ${r.expected}, got ${r.verdict ?? 'no verdict'}: ${r.reason}`])),
  ];
  const table = rows.length
    ? mdTableHead(['verdict', 'category', 'id', 'reason'])
    : 'Nothing crossed, unenforced, inconclusive or waived; every task verdict as expected.\n';
  const details = [
    ...notable.map((r) => evidenceDetails(`evidence: ${r.id} (${r.verdict}, fingerprint ${evidenceFingerprint(r)})`, r.evidence)),
    ...wrongTasks.map((r) => evidenceDetails(`evidence: ${r.id} (${r.outcome})`, r.evidence)),
  ];
  return fitMarkdown([...head, table, ...rows, '\n', ...details], maxBytes, truncationNote);
}

/**
 * Appends to the file GITHUB_STEP_SUMMARY names, if it does: the whole file stays under 1 MiB, so what is
 * already there leaves less room (a note replaces a section that does not fit). Returns the path written.
 */
export async function appendStepSummary(render: (maxBytes: number) => string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const path = env['GITHUB_STEP_SUMMARY'];
  if (!path) return undefined;
  const existing = await stat(path).then(
    (s) => s.size,
    () => 0,
  );
  const room = STEP_SUMMARY_MAX_BYTES - existing;
  const text = room > 2048 ? render(room) : `\n${truncationNote(1)}\n`;
  await appendFile(path, `${text}\n`);
  return path;
}
