import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { securityScorecard, taskScorecard } from '../../harness/scorecard-builder.js';
import { visibleLine, visibleText } from '../../core/clean-text.js';
import { compareCards, comparisonMarkdown, comparisonText } from '../../reports/compare.js';
import { securityJunit } from '../../reports/junit-report.js';
import { summaryText } from '../../reports/summary-table.js';
import { writeScorecards } from '../../reports/write-cards.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

// Every character that can change what a reader sees: C0, DEL, C1 (NEL, CSI), bidi overrides and isolates.
const SPOOFERS = ['\u0007', '\u0008', '\r', '\u007f', '\u0085', '\u009b', '\u202a', '\u202e', '\u2066', '\u2069', '\u200f'];
const RAW = new RegExp(`[${SPOOFERS.join('')}\\u001b]`);

function hostileResult(): SecurityResult {
  return {
    id: 'spoof-probe',
    title: `title \u202egnp.exe\u202c with \u0085 and \u009b`,
    category: 'files',
    policyItem: 'files.hostPaths',
    severity: 'high',
    verdict: 'crossed',
    reason: `box said \u001b]0;pwned\u0007 then \u001b[2J and \u202eheld\u202c\r overwritten ${SPOOFERS.join('')}`,
    remediation: 'none',
    evidence: [{ source: 'inside', witness: 'stdout', detail: `\u2066isolated\u2069 \u0085next` }],
    durationMs: 1,
  };
}

function cards() {
  const meta = { runId: 'rspoof0001', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
  const backend = new FakeBackend(() => ({}));
  return { security: securityScorecard(backend, FAST_POLICY, meta, [hostileResult()]), task: taskScorecard(backend, FAST_POLICY, meta, []) };
}

describe('text that cannot spoof', () => {
  it('C0, C1 and bidi controls are shown escaped, never dropped', () => {
    expect(visibleText('a\u202eb')).toBe('a\\u202eb');
    expect(visibleText('x\u0085y\u009bz')).toBe('x\\x85y\\x9bz');
    expect(visibleText('\u2066i\u2069')).toBe('\\u2066i\\u2069');
    expect(visibleText('bell\u0007 cr\r')).toBe('bell\\x07 cr\\x0d');
    expect(visibleText('lone \u001b here')).toBe('lone \\x1b here');
    expect(visibleLine('two\nlines\ttab')).toBe('two\\x0alines\\x09tab');
    // An 8-bit CSI is shown, not interpreted: what follows it stays readable.
    expect(visibleText('a\u009b31mred')).toBe('a\\x9b31mred');
  });

  it('the same rule in JUnit names, properties and bodies', () => {
    const xml = securityJunit(cards().security);
    expect(xml).not.toMatch(RAW);
    expect(xml).toContain('\\u202egnp.exe');
    expect(xml).toMatch(/name="spoof-probe title \\u202egnp\.exe\\u202c with \\x85 and \\x9b"/);
  });

  it('the same rule in the summary table and the comparison (terminal and Markdown)', () => {
    const c = cards();
    const text = summaryText(c.security, c.task);
    expect(text).not.toMatch(RAW);
    expect(text).toContain('\\u202eheld');
    const cmp = compareCards([c, c]);
    expect(comparisonText(cmp)).not.toMatch(RAW);
    expect(comparisonMarkdown(cmp)).not.toMatch(RAW);
  });

  it('JSON reports hold no raw spoofing character, and parse back to exactly the same text', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-test-spoof-'));
    made.push(dir);
    const c = cards();
    const written = await writeScorecards(dir, c);
    const raw = readFileSync(written.files.securityJson, 'utf8');
    expect(raw).not.toMatch(RAW);
    expect(raw).toContain('\\u202e');
    const back = JSON.parse(raw) as { results: SecurityResult[] };
    expect(back.results[0]?.reason).toBe(hostileResult().reason);
  });
});
