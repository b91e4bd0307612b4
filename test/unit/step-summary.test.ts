import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyRunWaivers } from '../../harness/waivers.js';
import { gateReport } from '../../reports/gate.js';
import { gateMarkdown } from '../../reports/gate-render.js';
import { mdCell } from '../../reports/markdown-text.js';
import { STEP_SUMMARY_MAX_BYTES, appendStepSummary, runMarkdown } from '../../reports/step-summary.js';
import { tempOut } from '../helpers/cli.js';
import { fabricatedRun, secResult, taskResult } from './gate-fixtures.js';

const MIB = 1024 * 1024;
// One line of what a hostile payload prints: controls, ANSI, a table breaker, HTML, a code fence, a closing </pre>.
const HOSTILE_LINE = '\u0000\u001b[31mred\u001b[0m\u0007 | cell | <script>alert(1)</script> ``` `code` </pre></details> **bold** [link](http://x) \u202eevil\r';
const hostileOutput = Array.from({ length: 10_000 }, (_, i) => `${i} ${HOSTILE_LINE}`).join('\n');

function hostileCards() {
  const evidence = [
    { source: 'outside' as const, witness: 'canary-scan', where: 'stdout | <b>', detail: hostileOutput },
    { source: 'inside' as const, witness: 'payload-report', where: 'stdout', detail: hostileOutput },
  ];
  const results = [
    secResult('secret-decoy-file', 'crossed', { evidence, reason: `leaked ${HOSTILE_LINE}` }),
    secResult('fork-bomb', 'crossed', { evidence }),
    secResult('identity-uid', 'held'),
    secResult('dns-exfil', 'not-applicable'),
    secResult('memory-bomb', 'inconclusive', { evidence }),
  ];
  const waived = applyRunWaivers(results, 'bwrap', [{ probe: 'fork-bomb', reason: 'known | <i>x</i>', owner: 'ops', expires: '2099-01-01' }]);
  return fabricatedRun('run', waived.results, [taskResult('average-correct', 'unexpected'), taskResult('json-transform', 'as-expected')]);
}

/** The Markdown table rows (lines starting with `|`) and how many cells each has, counting only unescaped pipes. */
const cellCounts = (md: string): number[] =>
  md
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) => l.replace(/\\\\/g, '').replace(/\\\|/g, '').split('|').length - 2);

function expectSafeMarkdown(md: string): void {
  expect(Buffer.byteLength(md)).toBeLessThan(MIB);
  expect(md).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
  expect(md).not.toContain('<script');
  expect(md).not.toContain('</pre></details>');
  // Every <pre> closes exactly where we close it: the payload never writes the tag itself.
  expect(md.split('<pre>').length).toBe(md.split('</pre>').length);
  const counts = cellCounts(md);
  expect(counts.length).toBeGreaterThan(2);
  expect(new Set(counts).size).toBe(1);
}

describe('the CI step summary', () => {
  it('a run: counts per verdict, only what needs a look in the table, evidence folded, under 1 MiB with 10,000 hostile lines', () => {
    const { security, task } = hostileCards();
    const md = runMarkdown(security, task);
    expectSafeMarkdown(md);
    expect(md).toContain('## sandcheck: bwrap under policy unit — **FAILED**');
    expect(md).toContain('5 security: 1 held, 2 crossed, 0 unenforced, 1 inconclusive, 1 not applicable, 1 waived');
    expect(md).toContain('| crossed | resources | secret-decoy-file |');
    expect(md).toContain('| waived (crossed) | resources | fork-bomb | waived: known \\| &lt;i&gt;x&lt;/i&gt;');
    expect(md).toContain('| inconclusive | resources | memory-bomb |');
    expect(md).toContain('| unexpected | task | average-correct |');
    expect(md).not.toContain('identity-uid');
    expect(md).not.toContain('json-transform');
    expect(md).toMatch(/<details><summary>evidence: secret-decoy-file \(crossed, fingerprint [0-9a-f]{16}\)<\/summary>/);
    expect(md).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(md).toContain('\\x00red\\x07');
  });

  it('stays under the budget by leaving parts out with a note', () => {
    const { security, task } = hostileCards();
    const md = runMarkdown(security, task, 40_000);
    expect(Buffer.byteLength(md)).toBeLessThanOrEqual(40_000);
    expect(md).toMatch(/more parts left out to stay under 1 MiB/);
  });

  it('the gate renders the same way', () => {
    const base = fabricatedRun('base', [secResult('secret-decoy-file', 'held'), secResult('fork-bomb', 'held')]);
    const md = gateMarkdown(gateReport(base, hostileCards(), []));
    expectSafeMarkdown(md);
    expect(md).toContain('| REGRESSION | security | secret-decoy-file | held | crossed |');
  });

  it('is appended to the file GITHUB_STEP_SUMMARY names, and the whole file stays under 1 MiB', async () => {
    const path = join(await tempOut(), 'summary.md');
    await writeFile(path, `# earlier step\n${'x'.repeat(900 * 1024)}\n`);
    const { security, task } = hostileCards();
    expect(await appendStepSummary((max) => runMarkdown(security, task, max), { GITHUB_STEP_SUMMARY: path })).toBe(path);
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('# earlier step\n')).toBe(true);
    expect(text).toContain('## sandcheck: bwrap');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(STEP_SUMMARY_MAX_BYTES + 1);
    expect(await appendStepSummary(() => 'never', {})).toBeUndefined();
  });

  it('a cell escapes what Markdown and HTML would interpret', () => {
    expect(mdCell('a|b `c` <x> *d* [e](f)')).toBe('a\\|b \\`c\\` &lt;x&gt; \\*d\\* \\[e\\](f)');
    expect(mdCell('line\nbreak\u0007')).toBe('line\\\\x0abreak\\\\x07');
  });
});
