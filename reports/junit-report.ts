import { mkdir } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname } from 'node:path';
import * as junitModule from 'junit-report-builder';
import type { Builder as JUnitBuilder } from 'junit-report-builder';
import type { SecurityResult, SecurityScorecard, TaskResult, TaskScorecard } from '../model/scorecard.js';
import type { Evidence } from '../model/evidence.js';
import { cleanForReport } from '../core/clean-text.js';
import { markWaived } from './junit-waived.js';
import { conformRoot, skipWithMessage } from './junit-conform.js';
import { threatOf } from './threat-mapping.js';

// The package is CommonJS with `module.exports = builder`, which its types describe as a default export.
const junit = (junitModule as unknown as { default: JUnitBuilder }).default;
type Builder = JUnitBuilder;
type Suite = ReturnType<Builder['testSuite']>;
type Case = ReturnType<Suite['testCase']>;

const seconds = (ms: number): number => Math.round(ms) / 1000;

function evidenceText(evidence: readonly Evidence[]): string {
  return evidence.map((e) => `[${e.source}] ${e.witness}${e.where ? ` @ ${e.where}` : ''}: ${e.detail}`).join('\n');
}

/** One-line attribute text: cleaned and short. */
const oneLine = (text: string): string => cleanForReport(text.replace(/\s+/g, ' '), 200);

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) map.set(key(item), [...(map.get(key(item)) ?? []), item]);
  return map;
}

const suiteSeconds = (results: readonly { durationMs: number }[]): number => seconds(results.reduce((a, r) => a + r.durationMs, 0));

/** The card-wide counts, one line: what a reader checks first. */
function summaryLine(card: SecurityScorecard | TaskScorecard): string {
  const s = card.summary;
  if ('held' in s)
    return `held ${s.held}, crossed ${s.crossed}, unenforced ${s.unenforced}, inconclusive ${s.inconclusive}, not-applicable ${s.notApplicable}${s.waived ? `, waived ${s.waived}` : ''} (of ${s.total})`;
  return `as-expected ${s.asExpected}, unexpected ${s.unexpected}, error ${s.error}, not-applicable ${s.notApplicable ?? 0}, non-reproducible ${s.nonReproducible} (of ${s.total})`;
}

/**
 * A suite opens with a few properties only: which backend, label, policy and run, the card's counts, and where
 * the rest is (the JSON card beside this file: the environment, each result's evidence). The facts of one case
 * (verdict, policy item, severity, ATT&CK, CWE, spec file) are the first line of its system-out.
 */
function suite(builder: Builder, name: string, card: SecurityScorecard | TaskScorecard, results: readonly { durationMs: number }[]): Suite {
  const label = card.environment?.label;
  const s = builder.testSuite().name(oneLine(name)).timestamp(card.run.startedAt).time(suiteSeconds(results)).property('backend', oneLine(card.backend.name));
  if (label) s.property('label', oneLine(label));
  s.property('policy', oneLine(card.policy.name)).property('run.id', oneLine(card.run.id));
  if (card.run.incomplete) s.property('run.incomplete', 'true');
  return s.property('summary', summaryLine(card)).property('environment', `${card.scorecard}.json#/environment`);
}

function securityCase(s: Suite, className: string, r: SecurityResult): Case {
  const c = s
    .testCase()
    .className(oneLine(className))
    .name(oneLine(`${r.id} ${r.title}`))
    .time(seconds(r.durationMs));
  const { attack, cwe } = threatOf(r);
  // The case's facts, one line, first in system-out (every reader shows it; the full record is the JSON card).
  const header = cleanForReport(
    `verdict: ${r.verdict}${r.claimed === false ? ' (not claimed)' : ''}, severity: ${r.severity}, policy item: ${r.policyItem}, ATT&CK: ${attack.join(' ') || 'none'}, CWE: ${cwe.join(' ') || 'none'}, spec: probes/${r.id}/probe.ts`.replace(
      /\s+/g,
      ' ',
    ),
    400,
  );
  const body = cleanForReport(`${r.reason}\n\nevidence:\n${evidenceText(r.evidence)}\n\nremediation: ${r.remediation}`);
  if (r.waiver && (r.verdict === 'crossed' || r.verdict === 'unenforced')) {
    markWaived(c, r.waiver, `${header}\n${r.verdict.toUpperCase()}: ${body}`);
    return c;
  }
  switch (r.verdict) {
    case 'held':
      c.standardOutput(cleanForReport(`${header}\nheld${r.claimed === false ? ' — not claimed' : ''}: ${r.reason}`));
      break;
    case 'crossed':
      c.failure(`CROSSED${r.claimed === false ? ' — NOT CLAIMED' : ''}: ${oneLine(r.reason)}`, 'BoundaryCrossed').stacktrace(body);
      c.standardOutput(header);
      break;
    case 'unenforced':
      c.failure(`UNENFORCED: ${oneLine(r.reason)}`, 'PolicyItemUnenforced').stacktrace(body);
      c.standardOutput(header);
      break;
    case 'inconclusive':
      c.error(`INCONCLUSIVE: ${oneLine(r.reason)}`, r.harnessError ? 'HarnessError' : 'Inconclusive', body);
      c.standardOutput(header);
      break;
    case 'not-applicable':
      skipWithMessage(c, `N/A: ${oneLine(r.reason)}`);
      c.standardOutput(cleanForReport(`${header}\nN/A: ${r.reason}`));
      break;
  }
  return c;
}

function taskCase(s: Suite, className: string, r: TaskResult): Case {
  const c = s
    .testCase()
    .className(oneLine(className))
    .name(oneLine(`${r.id} ${r.title}`))
    .time(seconds(r.durationMs));
  // The case's facts, one line, first in system-out (every reader shows it; the full record is the JSON card).
  const header = cleanForReport(
    `expected: ${r.expected}, verdict: ${r.verdict ?? 'none'}, outcome: ${r.outcome}, attempts: ${r.attempts.length}, reproducible: ${
      r.reproducible === null ? 'not replayed' : String(r.reproducible)
    }, spec: tasks/${r.id}/probe.ts`.replace(/\s+/g, ' '),
    400,
  );
  const attempts = r.attempts.map((a) => `attempt ${a.attempt}: ${a.verdict}: ${a.reason}`).join('\n');
  const budget = `budget: ${Math.round(r.budget.elapsedMs)} of ${r.budget.limitMs} ms, at most ${r.budget.maxAttempts} attempts`;
  const body = cleanForReport(
    `expected: ${r.expected}, got: ${r.verdict ?? 'no verdict'}\n${r.reason}\n${attempts}\n${budget}${r.replayNote ? `\n${r.replayNote}` : ''}\n\nevidence:\n${evidenceText(r.evidence)}`,
  );
  if (r.outcome === 'unexpected') {
    c.failure(`WRONG VERDICT: expected ${r.expected}, got ${r.verdict}: ${oneLine(r.reason)}`, 'WrongTaskVerdict').stacktrace(body);
    c.standardOutput(header);
  } else if (r.outcome === 'error') {
    c.error(`ERROR: ${oneLine(r.reason)}`, 'HarnessError', body);
    c.standardOutput(header);
  } else if (r.outcome === 'not-applicable') {
    skipWithMessage(c, `N/A: ${oneLine(r.reason)}`);
    c.standardOutput(cleanForReport(`${header}\n${body}`));
  } else {
    c.standardOutput(cleanForReport(`${header}\n${body}`));
  }
  return c;
}

export function securityJunit(card: SecurityScorecard): string {
  const builder = junit.newBuilder();
  let time = 0;
  for (const [category, results] of groupBy(card.results, (r) => r.category)) {
    const name = `${card.backend.name}.${category}`;
    const s = suite(builder, name, card, results);
    time += suiteSeconds(results);
    for (const r of results) securityCase(s, name, r);
  }
  return conformRoot(builder.build(), time);
}

export function taskJunit(card: TaskScorecard): string {
  const builder = junit.newBuilder();
  const name = `${card.backend.name}.task`;
  const s = suite(builder, name, card, card.results);
  for (const r of card.results) taskCase(s, name, r);
  return conformRoot(builder.build(), suiteSeconds(card.results));
}

export async function writeJunit(path: string, xml: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, xml);
}
