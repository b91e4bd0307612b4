import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { waiverNotices } from '../harness/waivers.js';
import { visibleLine } from '../core/clean-text.js';
import type { Change, GateReport } from './gate.js';
import { evidenceDetails, fitMarkdown, mdCell, mdRow, mdTableHead } from './markdown-text.js';

/** `3 held, 0 crossed, …, 1 not applicable`: the not-applicable (skipped) count always beside the others. */
export function securityCounts(s: SecurityScorecard['summary']): string {
  return `${s.total} security: ${s.held} held, ${s.crossed} crossed, ${s.unenforced} unenforced, ${s.inconclusive} inconclusive, ${s.notApplicable} not applicable${s.waived ? `, ${s.waived} waived` : ''}`;
}

export const taskCounts = (t: TaskScorecard['summary']): string =>
  `${t.total} task: ${t.asExpected} as expected, ${t.unexpected} unexpected, ${t.error} errors${t.notApplicable ? `, ${t.notApplicable} not applicable` : ''}${t.nonReproducible ? `, ${t.nonReproducible} not reproducible` : ''}`;

const label = (v: string | null): string => v ?? 'absent';

export function statusOf(c: Change): string {
  if (c.expiredWaiver) return `FAIL (waiver expired on ${c.expiredWaiver.expires})`;
  if (c.waiver) return `waived (${c.waiver.owner}, until ${c.waiver.expires})`;
  return c.class === 'regression' ? 'REGRESSION' : c.class;
}

export function gateSummaryLines(g: GateReport): string[] {
  const s = g.summary;
  return [
    `base ${g.base.backend}${g.base.label ? ` [${g.base.label}]` : ''} (${g.base.policy}): ${securityCounts(g.base.security)}; ${taskCounts(g.base.task)}`,
    `head ${g.head.backend}${g.head.label ? ` [${g.head.label}]` : ''} (${g.head.policy}): ${securityCounts(g.head.security)}; ${taskCounts(g.head.task)}`,
    ...(g.policyDifferences.length
      ? [
          `policy differs in ${g.policyDifferences.length} field(s): ${g.policyDifferences.map((d) => `${d.field} ${d.base} → ${d.head}`).join(', ')}`.slice(
            0,
            2000,
          ),
        ]
      : []),
    `gate: ${s.regressions} regressions, ${s.waived} waived, ${s.improvements} improvements, ${s.changed} other changes, ${s.unchanged} unchanged; waivers: ${s.expiredWaivers} expired, ${s.unusedWaivers} unused`,
  ].map(visibleLine);
}

export const waiverLines = (g: GateReport): string[] => waiverNotices(g.waivers, g.today);

const listed = (g: GateReport): Change[] => g.changes.filter((c) => c.class !== 'unchanged' || c.expiredWaiver);

export function gateText(g: GateReport): string {
  const rows = listed(g).map((c) => {
    const fp = c.fingerprint && c.class === 'regression' ? ` [fingerprint ${c.fingerprint}]` : '';
    return `  ${statusOf(c).padEnd(12)} ${c.kind.padEnd(8)} ${visibleLine(c.id)}: ${label(c.base)} → ${label(c.head)}${fp}\n      ${visibleLine(c.reason).slice(0, 200)}`;
  });
  return [
    ...gateSummaryLines(g),
    ...(rows.length ? ['', 'changes:', ...rows] : ['', 'no verdict changed']),
    ...waiverLines(g).map((l) => `! ${l}`),
    '',
    g.passed ? 'PASSED: no unwaived regression' : 'FAILED: the head run regressed (see above)',
  ].join('\n');
}

/** The gate as Markdown (--markdown FILE and the CI step summary): counts, a table of what changed, evidence folded. */
export function gateMarkdown(g: GateReport, maxBytes = 1024 * 1024 - 4096): string {
  const changes = listed(g);
  const head = [
    `## sandcheck gate: ${g.passed ? 'passed' : '**FAILED**'}\n\n`,
    ...gateSummaryLines(g).map((l) => `- ${mdCell(l, 600)}\n`),
    '\n',
    ...waiverLines(g).map((l) => `> ${mdCell(l, 600)}\n\n`),
  ];
  const rows = changes.map((c) => mdRow([statusOf(c), c.kind, c.id, label(c.base), label(c.head), c.reason]));
  const tableHead = changes.length ? mdTableHead(['status', 'kind', 'id', 'base', 'head', 'reason']) : 'No verdict changed.\n';
  const details = changes
    .filter((c) => c.class === 'regression' || c.expiredWaiver)
    .map((c) => evidenceDetails(`evidence: ${c.id}${c.fingerprint ? ` (fingerprint ${c.fingerprint})` : ''}`, c.evidence));
  return fitMarkdown(
    [...head, tableHead, ...rows, '\n', ...details],
    maxBytes,
    (n) => `_… ${n} more parts left out to stay under 1 MiB: the full report is \`sandcheck compare --json\`._`,
  );
}
