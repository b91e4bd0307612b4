import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { visibleText } from '../core/clean-text.js';

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const short = (text: string, max = 90): string => {
  const t = visibleText(text).replace(/\s+/g, ' ');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

/** The end-of-run summary: both report cards, never merged into one score. */
export function summaryText(security: SecurityScorecard, task: TaskScorecard): string {
  const s = security.summary;
  const t = task.summary;
  const sec = table([['SECURITY', 'verdict', 'category', 'reason'], ...security.results.map((r) => [short(r.id, 64), r.verdict, r.category, short(r.reason)])]);
  const tsk = table([
    ['TASK', 'expected', 'verdict', 'outcome', 'tries', 'replay', 'reason'],
    ...task.results.map((r) => [
      short(r.id, 64),
      r.expected,
      r.verdict ?? '-',
      r.outcome,
      String(r.attempts.length),
      r.reproducible === null ? '-' : r.reproducible ? 'same' : 'DIFFERS',
      short(r.reason, 70),
    ]),
  ]);
  return [
    sec,
    `security: ${s.held} held, ${s.crossed} crossed, ${s.unenforced} unenforced, ${s.inconclusive} inconclusive, ${s.notApplicable} not applicable`,
    '',
    tsk,
    `task: ${t.asExpected} as expected, ${t.unexpected} unexpected, ${t.error} errors${t.notApplicable ? `, ${t.notApplicable} not applicable` : ''}${t.nonReproducible ? `, ${t.nonReproducible} not reproducible` : ''}`,
    security.run.interrupted
      ? '\nthe run was INTERRUPTED: results are incomplete'
      : security.run.incomplete
        ? '\nthe run did not finish: results are INCOMPLETE'
        : '',
  ].join('\n');
}
