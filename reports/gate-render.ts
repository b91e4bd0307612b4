import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { waiverNotices } from '../harness/waivers.js';
import { visibleLine } from '../core/clean-text.js';
import { configLabel, type Change, type GateReport } from './gate.js';
import { evidenceDetails, fitMarkdown, mdCell, mdRow, mdTableHead } from './markdown-text.js';

/** `3 held, 0 crossed, …, 1 not applicable`: the not-applicable (skipped) count always beside the others. */
export function securityCounts(s: SecurityScorecard['summary']): string {
  return `${s.total} security: ${s.held} held, ${s.crossed} crossed, ${s.unenforced} unenforced, ${s.inconclusive} inconclusive, ${s.notApplicable} not applicable${s.waived ? `, ${s.waived} waived` : ''}`;
}

export const taskCounts = (t: TaskScorecard['summary']): string =>
  `${t.total} task: ${t.asExpected} as expected, ${t.unexpected} unexpected, ${t.error} errors${t.notApplicable ? `, ${t.notApplicable} not applicable` : ''}${t.nonReproducible ? `, ${t.nonReproducible} not reproducible` : ''}`;

const label = (v: string | null): string => v ?? 'absent';

export function statusOf(c: Change): string {
  if (c.expiredWaiver && !c.belowFailOn) return `FAIL (waiver expired on ${c.expiredWaiver.expires})`;
  if (c.waiver) return `waived (${c.waiver.owner}, until ${c.waiver.expires})`;
  if (c.belowFailOn)
    return `${c.class === 'regression' ? 'regression' : c.class} (below --fail-on${c.expiredWaiver ? `, waiver expired on ${c.expiredWaiver.expires}` : ''})`;
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
    ...(g.failOn !== 'low' ? [`fail on: security findings of severity ${g.failOn} or above; task, claim and policy regressions always`] : []),
    ...(g.excluded.length ? [`excluded from the gate: ${g.excluded.map((e) => `${e.pattern} (${e.matched.length})`).join(', ')}`.slice(0, 2000)] : []),
    `gate: ${s.regressions} regressions (${s.policyLoosened} policy loosened, ${s.claimsDropped} claims dropped), ${s.waived} waived, ${g.failOn !== 'low' ? `${s.belowFailOn} below --fail-on ${g.failOn}, ` : ''}${s.improvements} improvements, ${s.changed} other changes, ${s.unchanged} unchanged; waivers: ${s.expiredWaivers} expired, ${s.unusedWaivers} unused`,
  ].map(visibleLine);
}

/** Waivers that need attention, and --exclude patterns that left nothing out (a typo would otherwise pass unseen). */
export const waiverLines = (g: GateReport): string[] => [
  ...waiverNotices(g.waivers, g.today),
  ...g.excluded.filter((e) => e.matched.length === 0).map((e) => `--exclude ${visibleLine(e.pattern)} matched no probe or task case in either run`),
];

/** The differing option paths of the backend configuration, one line each. */
function configLines(g: GateReport): string[] {
  const d = g.backendConfig;
  return d.changed ? d.options.map((o) => `      ${visibleLine(o.path)}: ${visibleLine(o.base)} → ${visibleLine(o.head)}`) : [];
}

const listed = (g: GateReport): Change[] => g.changes.filter((c) => c.class !== 'unchanged' || c.expiredWaiver);

export function gateText(g: GateReport): string {
  const rows = listed(g).map((c) => {
    const fp = c.fingerprint && c.class === 'regression' ? ` [fingerprint ${c.fingerprint}]` : '';
    const sev = c.severity && c.class === 'regression' ? ` (${c.severity})` : '';
    const row = `  ${statusOf(c).padEnd(12)} ${c.kind.padEnd(8)} ${visibleLine(c.id)}: ${visibleLine(label(c.base))} → ${visibleLine(label(c.head))}${sev}${fp}\n      ${visibleLine(c.reason).slice(0, c.kind === 'policy' || c.kind === 'config' ? 600 : 200)}`;
    return c.kind === 'config' ? [row, ...configLines(g)].join('\n') : row;
  });
  return [
    ...gateSummaryLines(g),
    ...(rows.length ? ['', 'changes:', ...rows] : ['', 'no verdict changed']),
    ...waiverLines(g).map((l) => `! ${l}`),
    '',
    g.passed ? 'PASSED: no unwaived regression' : 'FAILED: the head run regressed or its policy or backend loosened (see above)',
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
  const d = g.backendConfig;
  const config =
    d.changed && d.options.length
      ? [
          `\n### Backend configuration: ${mdCell(configLabel(d.base), 300)} → ${mdCell(configLabel(d.head), 300)}\n\n`,
          mdTableHead(['option', 'base', 'head']),
          ...d.options.map((o) => mdRow([o.path, o.base, o.head])),
        ]
      : [];
  const details = changes
    .filter((c) => c.class === 'regression' || c.expiredWaiver)
    .map((c) => evidenceDetails(`evidence: ${c.id}${c.fingerprint ? ` (fingerprint ${c.fingerprint})` : ''}`, c.evidence));
  return fitMarkdown(
    [...head, tableHead, ...rows, ...config, '\n', ...details],
    maxBytes,
    (n) => `_… ${n} more parts left out to stay under 1 MiB: the full report is \`sandcheck compare --json\`._`,
  );
}
