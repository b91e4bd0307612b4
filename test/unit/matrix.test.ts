import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, describe, expect, it } from 'vitest';
import { runDirName, writeMatrix } from '../../cli/matrix-command.js';
import { parseBackendList } from '../../cli/backend-list-arg.js';
import { buildMatrix, coldStart, MatrixReportSchema, scoreLine } from '../../reports/matrix-model.js';
import { cards, matrixFixture, sec } from '../helpers/matrix-fixtures.js';
import { matrixHtml } from '../../reports/matrix-html.js';
import { matrixMarkdown } from '../../reports/matrix-markdown.js';
import { generatedSchemas } from '../../scripts/schemas.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('sandcheck matrix', () => {
  it('rows are grouped by category in a fixed order, then the task cases; a column per backend, verdicts per cell', () => {
    const m = buildMatrix(matrixFixture());
    expect(m.rows.map((r) => `${r.group}:${r.id}`)).toEqual(['files:files-secret', 'network:net-metadata', 'resources:res-fork', 'task:task-csv']);
    expect(m.columns.map((c) => c.header)).toEqual(['process', 'bwrap [hard|ened]', 'gvisor']);
    const net = m.rows.find((r) => r.id === 'net-metadata');
    expect(net?.cells.map((c) => c?.verdict ?? null)).toEqual(['crossed', 'crossed', null]);
    expect(net?.differs).toBe(false);
    expect(m.rows.find((r) => r.id === 'files-secret')?.differs).toBe(true);
    expect(m.rows.find((r) => r.id === 'task-csv')?.cells[1]).toMatchObject({ verdict: 'rejected', outcome: 'unexpected' });
    // Every cell's anchor is unique: the HTML links land on that cell's evidence.
    const anchors = m.rows.flatMap((r) => r.cells.flatMap((c) => (c ? [c.anchor] : [])));
    expect(new Set(anchors).size).toBe(anchors.length);
  });

  it('per-backend totals of both cards, tool version, kernel, and a score that leads with crossed and inconclusive and has no percentage', () => {
    const [p, b] = buildMatrix(matrixFixture()).columns;
    expect(p?.security).toMatchObject({ total: 3, crossed: 3, held: 0 });
    expect(p?.task).toMatchObject({ total: 1, asExpected: 1 });
    expect(b?.security).toMatchObject({ crossed: 1, inconclusive: 1, held: 1 });
    expect(b?.score).toBe('crossed 1 · inconclusive 1 · unenforced 0 · held 1 · n/a 0 | task: unexpected 1 · error 0 · as expected 0');
    expect(b?.score).not.toContain('%');
    expect(b?.tool).toBe('bubblewrap 0.8.0');
    expect(p?.tool).toBe('Python 3.11.2');
    expect(b?.kernel).toBe('6.1.0-test');
    expect(scoreLine(undefined, undefined)).toBe('not run');
  });

  it("a preset's column names its own tool (the backend's answer), not another tool that is merely installed", () => {
    const preset = cards('firejail', [sec('files-secret', 'held', 'files')], [], {
      tools: [{ tool: 'backend:preset:firejail', status: 'ok', version: 'firejail version 0.9.72' }],
    });
    const unknown = cards('my-adapter', [sec('files-secret', 'held', 'files')], []);
    const [f, u] = buildMatrix([preset, unknown]).columns;
    expect(f?.tool).toBe('firejail version 0.9.72');
    expect(u?.tool).toBeUndefined();
  });

  it('cold start p50/p95 from every execution of both cards (nearest rank); none recorded is null, never 0', () => {
    const [p, b] = buildMatrix(matrixFixture()).columns;
    expect(p?.coldStartMs).toEqual({ samples: 4, p50: 20, p95: 40 });
    expect(b?.coldStartMs).toBeNull();
    const many = Array.from({ length: 100 }, (_, i) => ({ observation: { startupMs: i + 1 } }));
    expect(coldStart(many)).toEqual({ samples: 100, p50: 50, p95: 95 });
  });

  it('a claimed item whose probe crossed or was inconclusive is a FALSE CLAIM; a held one is not; an unprobed claim says so', () => {
    const b = buildMatrix(matrixFixture()).columns[1];
    expect(b?.claims).toEqual([
      { item: 'files.hostRead', claimed: true, observed: 'held', probes: ['files-secret'], failing: [], falseClaim: false },
      { item: 'identity.nonRoot', claimed: true, observed: 'not probed', probes: [], failing: [], falseClaim: false },
      { item: 'network.egress', claimed: true, observed: 'crossed', probes: ['net-metadata'], failing: ['net-metadata'], falseClaim: true },
      { item: 'resources.processes', claimed: true, observed: 'inconclusive', probes: ['res-fork'], failing: ['res-fork'], falseClaim: true },
    ]);
    expect(b?.falseClaims).toBe(2);
    const m = buildMatrix(matrixFixture());
    const md = matrixMarkdown(m);
    expect(md).toContain('| network.egress | not claimed | **FALSE CLAIM: claimed, observed crossed (net-metadata)** | unavailable |');
    expect(md).toContain('| files.hostRead | not claimed | claimed, observed held (files-secret) | unavailable |');
    expect(matrixHtml(m)).toContain('<td class="false"><strong>FALSE CLAIM</strong>: claimed, observed crossed (net-metadata)</td>');
  });

  it('an item not claimed whose probes ran shows what they observed; FALSE CLAIM names only the probes that failed', () => {
    const input = matrixFixture();
    const [process, bwrap] = input;
    if (process?.kind !== 'cards' || bwrap?.kind !== 'cards') throw new Error('fixture');
    // The control ran every probe and claims nothing; bwrap claims network.egress, and of its two probes one held.
    for (const r of process.security.results) r.claimed = false;
    const pnet = process.security.results.find((r) => r.id === 'net-metadata');
    if (pnet) pnet.policyItem = 'network.egress';
    bwrap.security.results.push({ ...bwrap.security.results[0]!, id: 'net-dns', policyItem: 'network.egress', verdict: 'held', claimed: true });
    const m = buildMatrix(input);
    const md = matrixMarkdown(m);
    expect(md.split('\n').filter((l) => l.startsWith('| network.egress |'))).toEqual([
      '| network.egress | not claimed, observed crossed (net-metadata) | **FALSE CLAIM: claimed, observed crossed (net-metadata)** | unavailable |',
    ]);
    expect(m.columns[0]?.claims.every((c) => !c.claimed && !c.falseClaim)).toBe(true);
    expect(m.columns[0]?.falseClaims).toBe(0);
    expect(matrixHtml(m)).toContain('<td class="false">not claimed, observed crossed (net-metadata)</td>');
  });

  it('an unavailable backend is a column marked unavailable with its install command, never dropped', () => {
    const m = buildMatrix(matrixFixture());
    const g = m.columns[2];
    expect(g).toMatchObject({
      status: 'unavailable',
      backend: 'gvisor',
      unavailable: { install: 'apt-get install -y docker.io runsc' },
      score: 'not run: unavailable',
    });
    expect(m.rows.every((r) => r.cells[2] === null)).toBe(true);
    const md = matrixMarkdown(m);
    expect(md).toContain('UNAVAILABLE: BACKEND\\_UNAVAILABLE: runsc is not installed; install: apt-get install -y docker.io runsc');
    expect(md).toContain('| **files-secret** | crossed | held | unavailable |');
    const html = matrixHtml(m);
    expect(html).toContain('install: apt-get install -y docker.io runsc');
    expect(html).toContain('<td class="v unavailable">unavailable</td>');
  });

  it('HTML: evidence with <script> and quotes is text, never markup; no script element, no external resource; verdicts link to their evidence', () => {
    const m = buildMatrix(matrixFixture());
    const html = matrixHtml(m);
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain("&lt;script&gt;document.title='pwned'&lt;/script&gt; &quot;quoted&quot; &amp; | pipe");
    expect(html).not.toMatch(/\b(src|href)="(?!#)/);
    expect(html).not.toMatch(/@import|url\(/);
    const cell = m.rows.find((r) => r.id === 'net-metadata')?.cells[1];
    expect(html).toContain(`<a href="#${cell?.anchor}">crossed</a>`);
    expect(html).toContain(`id="${cell?.anchor}"`);
  });

  it('Markdown: a pipe cannot end a cell, HTML in evidence is entities, backticks cannot open code', () => {
    const md = matrixMarkdown(buildMatrix(matrixFixture()));
    expect(md).toContain('bwrap \\[hard\\|ened\\]');
    expect(md).toContain("&lt;script&gt;document.title='pwned'&lt;/script&gt; &quot;quoted&quot; &amp; \\| pipe");
    expect(md).not.toMatch(/<script/i);
    expect(md).toContain('\\`tick\\`');
    // Every table row has exactly as many unescaped pipes as the header of its table.
    const cellsOf = (line: string): number => line.replace(/\\\|/g, '').split('|').length;
    let width = 0;
    for (const line of md.split('\n')) {
      if (!line.startsWith('|')) width = 0;
      else if (width === 0) width = cellsOf(line);
      else expect(cellsOf(line), line).toBe(width);
    }
  });

  it('matrix.json matches its generated JSON Schema and the zod schema; the files are written side by side', async () => {
    const m = buildMatrix(matrixFixture());
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(generatedSchemas()['matrix.schema.json'] as object);
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-matrix-'));
    dirs.push(dir);
    const files = await writeMatrix(dir, m);
    const doc: unknown = JSON.parse(await readFile(files.json, 'utf8'));
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    expect(MatrixReportSchema.parse(doc)).toEqual(m);
    expect(await readFile(files.html, 'utf8')).toBe(matrixHtml(m));
  });

  it('--backend lists and run directory names', () => {
    expect(parseBackendList('process,bwrap', ['process'])).toEqual(['process', 'bwrap']);
    expect(() => parseBackendList('process,,bwrap')).toThrow(/empty name/);
    expect(runDirName('rpc:python3 my adapter.py')).toBe('rpc_python3_my_adapter.py');
    expect(runDirName('../x')).toBe('__x');
  });
});
