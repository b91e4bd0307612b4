import { mkdir } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname } from 'node:path';
import * as junitModule from 'junit-report-builder';
import type { Builder as JUnitBuilder } from 'junit-report-builder';
import type { SecurityResult, SecurityScorecard, TaskResult, TaskScorecard } from '../model/scorecard.js';
import type { Evidence } from '../model/evidence.js';
import { cleanForReport } from '../core/clean-text.js';
import { markWaived } from './junit-waived.js';
import { dropRootSkippedCount, hoistCaseProperties, skipWithMessage } from './junit-conform.js';
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

function suite(builder: Builder, name: string, card: SecurityScorecard | TaskScorecard, results: readonly { durationMs: number }[]): Suite {
  return builder
    .testSuite()
    .name(oneLine(name))
    .timestamp(card.run.startedAt)
    .time(seconds(results.reduce((a, r) => a + r.durationMs, 0)))
    .property('backend', oneLine(card.backend.name))
    .property('policy', oneLine(card.policy.name))
    .property('run.id', oneLine(card.run.id))
    .property('scorecard.version', card.version)
    .property('run.incomplete', String(card.run.incomplete));
}

function securityCase(s: Suite, className: string, r: SecurityResult): Case {
  const c = s
    .testCase()
    .className(oneLine(className))
    .name(oneLine(`${r.id} ${r.title}`))
    .time(seconds(r.durationMs));
  const { attack, cwe } = threatOf(r);
  c.property('verdict', r.verdict)
    .property('policy.item', oneLine(r.policyItem))
    .property('severity', r.severity)
    .property('file', oneLine(`probes/${r.id}/probe.ts`));
  c.property('attack', attack.join(' ')).property('cwe', cwe.join(' '));
  // Readers that show neither properties nor attributes still show system-out: the same facts, one line.
  const header = oneLine(
    `verdict: ${r.verdict}, severity: ${r.severity}, policy item: ${r.policyItem}, ATT&CK: ${attack.join(' ') || 'none'}, CWE: ${cwe.join(' ') || 'none'}`,
  );
  const body = cleanForReport(`${r.reason}\n\nevidence:\n${evidenceText(r.evidence)}\n\nremediation: ${r.remediation}`);
  if (r.waiver && (r.verdict === 'crossed' || r.verdict === 'unenforced')) {
    markWaived(c, r.waiver, `${r.verdict.toUpperCase()}: ${body}`);
    return c;
  }
  switch (r.verdict) {
    case 'held':
      c.standardOutput(cleanForReport(`${header}\nheld: ${r.reason}`));
      break;
    case 'crossed':
      c.failure(`CROSSED: ${oneLine(r.reason)}`, 'BoundaryCrossed').stacktrace(body);
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
      c.property('skip.reason', `N/A: ${oneLine(r.reason)}`).standardOutput(cleanForReport(`${header}\nN/A: ${r.reason}`));
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
  c.property('file', oneLine(`tasks/${r.id}/probe.ts`))
    .property('expected', r.expected)
    .property('verdict', r.verdict ?? 'none')
    .property('outcome', r.outcome);
  c.property('attempts', String(r.attempts.length)).property('reproducible', r.reproducible === null ? 'not replayed' : String(r.reproducible));
  const attempts = r.attempts.map((a) => `attempt ${a.attempt}: ${a.verdict}: ${a.reason}`).join('\n');
  const budget = `budget: ${Math.round(r.budget.elapsedMs)} of ${r.budget.limitMs} ms, at most ${r.budget.maxAttempts} attempts`;
  const body = cleanForReport(
    `expected: ${r.expected}, got: ${r.verdict ?? 'no verdict'}\n${r.reason}\n${attempts}\n${budget}${r.replayNote ? `\n${r.replayNote}` : ''}\n\nevidence:\n${evidenceText(r.evidence)}`,
  );
  if (r.outcome === 'unexpected') {
    c.failure(`WRONG VERDICT: expected ${r.expected}, got ${r.verdict}: ${oneLine(r.reason)}`, 'WrongTaskVerdict').stacktrace(body);
  } else if (r.outcome === 'error') {
    c.error(`ERROR: ${oneLine(r.reason)}`, 'HarnessError', body);
  } else if (r.outcome === 'not-applicable') {
    skipWithMessage(c, `N/A: ${oneLine(r.reason)}`);
    c.property('skip.reason', `N/A: ${oneLine(r.reason)}`).standardOutput(body);
  } else {
    c.standardOutput(body);
  }
  return c;
}

export function securityJunit(card: SecurityScorecard): string {
  const builder = junit.newBuilder();
  for (const [category, results] of groupBy(card.results, (r) => r.category)) {
    const name = `${card.backend.name}.${category}`;
    const s = suite(builder, name, card, results);
    for (const r of results) hoistCaseProperties(securityCase(s, name, r), r.id);
  }
  return dropRootSkippedCount(builder.build());
}

export function taskJunit(card: TaskScorecard): string {
  const builder = junit.newBuilder();
  const name = `${card.backend.name}.task`;
  const s = suite(builder, name, card, card.results);
  for (const r of card.results) hoistCaseProperties(taskCase(s, name, r), r.id);
  return dropRootSkippedCount(builder.build());
}

export async function writeJunit(path: string, xml: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, xml);
}
