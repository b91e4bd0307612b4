import { describe, expect, it } from 'vitest';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { buildMatrix, type MatrixInput } from '../../reports/matrix-model.js';
import { matrixHtml } from '../../reports/matrix-html.js';
import { coldStartText, matrixMarkdown } from '../../reports/matrix-markdown.js';
import { MATRIX_LEGEND, RANKING_RULE } from '../../reports/matrix-recommend.js';
import { cards, sec } from '../helpers/matrix-fixtures.js';
import { fakeObservation } from '../helpers/observation.js';
import { taskResult } from './gate-fixtures.js';

/** The matrix recommends: a ranking with its rule, a paragraph per backend, a legend, timings over equal samples. */

const timed = <T extends SecurityResult | TaskResult>(r: T, startupMs: number): T => ({ ...r, observation: fakeObservation({ startupMs }).exec });
const claimedAs = (r: SecurityResult, claimed: boolean): SecurityResult => ({ ...r, claimed });

/** leaky: 2 crossed; shaky: 0 crossed, 2 inconclusive; lucky: 0 crossed, 2 inconclusive, 1 held not claimed; tight: nothing through. */
function fourBackends(): MatrixInput[] {
  const leaky = cards(
    'leaky',
    [sec('metadata-ipv4', 'crossed', 'network'), sec('fork-bomb', 'crossed', 'resources'), sec('secret-decoy-file', 'held', 'files')],
    [],
  );
  const shaky = cards(
    'shaky',
    [
      claimedAs(sec('metadata-ipv4', 'inconclusive', 'network', { policyItem: 'network.egress' }), true),
      sec('fork-bomb', 'inconclusive', 'resources'),
      claimedAs(sec('secret-decoy-file', 'held', 'files', { policyItem: 'files.hostPaths' }), true),
    ],
    [],
    { enforces: ['network.egress', 'files.hostPaths'] },
  );
  const lucky = cards(
    'lucky',
    [
      sec('metadata-ipv4', 'inconclusive', 'network'),
      sec('fork-bomb', 'inconclusive', 'resources'),
      claimedAs(sec('secret-decoy-file', 'held', 'files', { policyItem: 'files.hostPaths' }), false),
    ],
    [],
  );
  const tight = cards(
    'tight',
    ['metadata-ipv4', 'fork-bomb', 'secret-decoy-file'].map((id) => claimedAs(sec(id, 'held', 'files', { policyItem: 'files.hostPaths' }), true)),
    [],
    { enforces: ['files.hostPaths'] },
  );
  return [leaky, shaky, lucky, tight, { kind: 'unavailable', source: '/out/x', backend: 'gone', reason: 'not installed', install: 'apt-get install -y gone' }];
}

describe('matrix ranking', () => {
  it('ranks by crossed, then inconclusive, then held-not-claimed; equal keys share a rank; a backend that did not run comes last, unranked', () => {
    const m = buildMatrix(fourBackends());
    const order = m.ranking.order.map((o) => [m.columns[o.column]?.backend, o.rank, o.key.join('/')]);
    expect(order).toEqual([
      ['tight', 1, '0/0/0/0'],
      ['shaky', 2, '0/2/0/0'],
      ['lucky', 3, '0/2/1/0'],
      ['leaky', 4, '2/0/1/0'],
      ['gone', null, ''],
    ]);
    expect(m.ranking.rule).toBe(RANKING_RULE);
    const twins = buildMatrix([cards('a', [sec('x', 'crossed', 'files')], []), cards('b', [sec('x', 'crossed', 'files')], [])]);
    expect(twins.ranking.order.map((o) => o.rank)).toEqual([1, 1]);
    expect(matrixMarkdown(twins)).toMatch(/^\| 1= \| a \|/m);
  });

  it('both renderers state the rule and list the backends in rank order', () => {
    const m = buildMatrix(fourBackends());
    const md = matrixMarkdown(m);
    expect(md).toContain('## Ranking');
    expect(md).toContain('fewest first: crossed probes, then inconclusive ones, then probes that held although the backend does not claim');
    const ranked = ['tight', 'shaky', 'lucky', 'leaky', 'gone'].map((b) => md.search(new RegExp(`^- \\*\\*[^*]*\\. ${b}`, 'm')));
    expect(ranked.every((i) => i > 0)).toBe(true);
    expect([...ranked].sort((a, b) => a - b)).toEqual(ranked);
    const html = matrixHtml(m);
    expect(html).toContain('<h2>Ranking</h2>');
    expect(html.indexOf('<strong>1. tight')).toBeLessThan(html.indexOf('<strong>4. leaky'));
  });
});

describe('matrix summaries', () => {
  it('one paragraph per backend names what crossed, what it claims falsely, what stayed inconclusive and what it stops', () => {
    const [leaky, shaky, lucky, tight, gone] = buildMatrix(fourBackends()).columns;
    expect(leaky?.summary).toContain('It does not stop 2 (crossed): metadata-ipv4, fork-bomb.');
    expect(leaky?.summary).toContain('It stopped 1 of the 3 probes that ran: every probe of files (1).');
    expect(shaky?.summary).toContain('Nothing crossed.');
    expect(shaky?.summary).toContain('It claims falsely 1 item: network.egress (metadata-ipv4 inconclusive).');
    expect(shaky?.summary).toContain('Inconclusive 2: metadata-ipv4, fork-bomb.');
    expect(lucky?.summary).toContain('Held though not claimed 1 (holds it does not promise): secret-decoy-file.');
    expect(tight?.summary).toContain('every probe of files (3)');
    expect(tight?.summary).toContain('No claim of it was false.');
    expect(gone?.summary).toBe('gone did not run here: not installed. Install: apt-get install -y gone.');
    const md = matrixMarkdown(buildMatrix(fourBackends()));
    expect(md).toContain('It does not stop 2 (crossed): metadata-ipv4, fork-bomb.');
  });

  it('the control says it is the control; a backend on which nothing ran says so', () => {
    const m = buildMatrix([
      cards('process', [sec('x', 'crossed', 'files')], [], { isolation: 'none' }),
      cards('idle', [sec('x', 'not-applicable', 'files'), sec('y', 'unenforced', 'files')], []),
    ]);
    expect(m.columns[0]?.summary).toMatch(/^process is the unsandboxed control/);
    expect(m.columns[1]?.summary).toMatch(/^No probe ran on it: every one was not-applicable or unenforced\. Nothing crossed\./);
    expect(m.columns[1]?.summary).toContain('Unenforced 1 (not run: required, not enforced): y.');
  });
});

describe('matrix legend', () => {
  it('every verdict and mark is explained in Markdown and HTML', () => {
    const m = buildMatrix(fourBackends());
    const md = matrixMarkdown(m);
    const html = matrixHtml(m);
    const terms = MATRIX_LEGEND.map((l) => l.term);
    for (const t of ['held', 'crossed', 'inconclusive', 'not-applicable', 'unenforced', 'not claimed', 'FALSE CLAIM']) expect(terms).toContain(t);
    expect(md).toContain('## Legend');
    expect(html).toContain('<h2>Legend</h2>');
    for (const l of MATRIX_LEGEND) {
      expect(md).toMatch(new RegExp(`^- \\*\\*${l.term.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')}\\*\\*: `, 'm'));
      expect(html).toContain(`">${l.term}</td><td>`);
    }
  });
});

describe('matrix timings and tools', () => {
  it('cold start is compared over the same executions in every column, and every figure has its sample size beside it', () => {
    const fast = cards(
      'fast',
      [timed(sec('a', 'held', 'files'), 10), timed(sec('b', 'held', 'files'), 20), timed(sec('c', 'held', 'files'), 900)],
      [timed(taskResult('t', 'as-expected'), 30)],
    );
    const slow = cards('slow', [timed(sec('a', 'held', 'files'), 100), timed(sec('b', 'held', 'files'), 200)], []);
    const m = buildMatrix([fast, slow]);
    expect(m.coldStartSame).toEqual({ samples: 2, columns: 2 });
    const [f, s] = m.columns;
    expect(f?.coldStartSameMs).toEqual({ samples: 2, p50: 10, p95: 20 });
    expect(s?.coldStartSameMs).toEqual({ samples: 2, p50: 100, p95: 200 });
    expect(f?.coldStartMs?.samples).toBe(4);
    expect(coldStartText(f!, m)).toBe('p50 10 ms · p95 20 ms over the same 2 executions; all: p50 20 ms · p95 900 ms (4 executions)');
    expect(matrixMarkdown(m)).toContain("p50 100 ms · p95 200 ms over the same 2 executions (all of this run's)");
    expect(matrixHtml(m)).toContain('over the same 2 executions');
  });

  it("a column header names the tool and its version; a bare version number gets the tool's name", () => {
    const srt = (name: string): MatrixInput =>
      cards(name, [sec('x', 'held', 'files')], [], { tools: [{ tool: `backend:preset:${name}`, status: 'ok', version: '0.0.78' }] });
    const podman = cards('podman', [sec('x', 'held', 'files')], [], {
      tools: [{ tool: 'backend:preset:podman', status: 'ok', version: 'podman version 4.3.1, build 1234' }],
    });
    const m = buildMatrix([srt('srt'), srt('srt-deny-home'), podman, cards('bwrap', [sec('x', 'held', 'files')], [])]);
    expect(m.columns.map((c) => [c.tool, c.toolShort])).toEqual([
      ['srt 0.0.78', 'srt 0.0.78'],
      ['srt 0.0.78', 'srt 0.0.78'],
      ['podman version 4.3.1, build 1234', 'podman 4.3.1'],
      ['bubblewrap 0.8.0', 'bubblewrap 0.8.0'],
    ]);
    expect(matrixMarkdown(m)).toContain('| probe | srt (srt 0.0.78) | srt-deny-home (srt 0.0.78) | podman (podman 4.3.1) | bwrap (bubblewrap 0.8.0) |');
    expect(matrixHtml(m)).toContain('srt-deny-home<div class="tool">srt 0.0.78</div>');
  });
});
