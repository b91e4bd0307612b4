import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeText, sniffContentType } from '../../harness/export/content-type.js';
import { columnLetters, findFormulaCells, isFormulaCell } from '../../harness/export/csv-formula.js';
import { checkArchiveEntryName, normaliseExportPath } from '../../harness/export/export-path.js';
import { findSvgHazards } from '../../harness/export/svg-script.js';
import { admits, nameContentMismatch } from '../../harness/export/type-rules.js';
import { SAMPLES } from '../fixtures/export/samples.js';
import { makeTar } from '../fixtures/export/tar-writer.js';
import { makeZip } from '../fixtures/export/zip-writer.js';

const text = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

describe('content type by magic bytes', () => {
  it.each([
    ['png', SAMPLES.png],
    ['jpeg', SAMPLES.jpeg],
    ['gif', SAMPLES.gif],
    ['pdf', SAMPLES.pdf],
    ['elf', SAMPLES.elf],
    ['pe', SAMPLES.pe],
    ['macho', SAMPLES.macho],
    ['wasm', SAMPLES.wasm],
    ['script', SAMPLES.script],
    ['csv', SAMPLES.csv],
    ['json', SAMPLES.json],
    ['svg', SAMPLES.svg],
    ['text', SAMPLES.text],
    ['zip', makeZip([{ name: 'a', content: 'a' }])],
    ['tar', makeTar([{ name: 'a', content: 'a' }])],
    ['gzip', gzipSync('hello')],
    ['xml', text('<?xml version="1.0"?><root/>')],
    ['html', text('<!DOCTYPE html><html><body>x</body></html>')],
    ['empty', new Uint8Array()],
    ['binary', new Uint8Array([0, 1, 2, 3, 255, 254, 0, 0])],
    ['csv', text('a\tb\tc\n1\t2\t3\n')],
  ] as const)('%s', (type, bytes) => {
    expect(sniffContentType(bytes)).toBe(type);
  });

  it('an MZ text file is text, an MZ with a PE header is PE', () => {
    expect(sniffContentType(text(`MZ is a great band, they said.${' '.repeat(80)}`))).toBe('text');
    expect(sniffContentType(SAMPLES.pe)).toBe('pe');
  });

  it('a Java class file is not taken for a fat Mach-O', () => {
    expect(sniffContentType(new Uint8Array([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52, 1, 2]))).toBe('binary');
    expect(sniffContentType(new Uint8Array([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2, 1, 2]))).toBe('macho');
  });

  it('text detection rejects invalid UTF-8 and NUL', () => {
    expect(decodeText(new Uint8Array([0x61, 0xff, 0x62]))).toBeUndefined();
    expect(decodeText(new Uint8Array([0x61, 0x00, 0x62]))).toBeUndefined();
    expect(decodeText(text('héllo'))).toBe('héllo');
  });

  it('names promise types; content decides', () => {
    expect(nameContentMismatch('results.csv', 'elf')).toBe('.csv promises text');
    expect(nameContentMismatch('results.csv', 'text')).toBeUndefined();
    expect(nameContentMismatch('results.CSV', 'json')).toBeUndefined();
    expect(nameContentMismatch('report.xlsx', 'zip')).toBe('.xlsx promises xlsx');
    expect(nameContentMismatch('noext', 'elf')).toBeUndefined();
    expect(admits(['text'], 'svg')).toBe(true);
    expect(admits(['zip'], 'xlsx')).toBe(true);
    expect(admits(['csv'], 'text')).toBe(false);
  });
});

describe('export paths', () => {
  it.each([
    ['a.txt', 'a.txt'],
    ['./a/./b.txt', 'a/b.txt'],
    ['a//b.txt', 'a/b.txt'],
    ['a/../b.txt', 'b.txt'],
    ['a/b/', 'a/b'],
  ])('%s → %s', (raw, out) => {
    expect(normaliseExportPath(raw)).toEqual({ ok: true, path: out });
  });

  it.each([
    ['', 'path-empty'],
    ['.', 'path-empty'],
    ['a/..', 'path-empty'],
    ['../x', 'path-escape'],
    ['a/../../b', 'path-escape'],
    ['/etc/x', 'path-absolute'],
    ['//server/share', 'path-absolute'],
    ['c:x', 'path-absolute'],
    ['a\\..\\..\\b', 'path-backslash'],
    ['a\0b', 'path-nul'],
    ['a\rb', 'path-control-char'],
  ])('%j is refused: %s', (raw, rule) => {
    const r = normaliseExportPath(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.rule).toBe(rule);
  });

  it('archive entry names are judged with both separators', () => {
    expect(checkArchiveEntryName('a/b/../c')).toEqual({ ok: true });
    expect(checkArchiveEntryName('a\\..\\..\\c')).toMatchObject({ ok: false, rule: 'archive-escape' });
    expect(checkArchiveEntryName('\\evil')).toMatchObject({ ok: false, rule: 'archive-absolute' });
    expect(checkArchiveEntryName('D:evil')).toMatchObject({ ok: false, rule: 'archive-absolute' });
    expect(checkArchiveEntryName('x/../../y')).toMatchObject({ ok: false, rule: 'archive-escape' });
  });
});

describe('CSV formula injection', () => {
  it('finds formulas with their cell, and leaves plain numbers alone', () => {
    const csv = 'name,value,link\n"ada",-3,"=HYPERLINK(""http://evil"",""x"")"\nbob,+1.5e3,@SUM(A1)\ncarl,\t=1+1,-\n"multi\nline",=cmd|\' /C calc\'!A0,ok\n';
    const { cells, total } = findFormulaCells(csv, ',', 10);
    expect(total).toBe(4);
    expect(cells.map((c) => [c.row, c.column, columnLetters(c.column)])).toEqual([
      [2, 3, 'C'],
      [3, 3, 'C'],
      [4, 2, 'B'],
      [5, 2, 'B'],
    ]);
    expect(cells[0]?.cell).toBe('=HYPERLINK("http://evil","x")');
  });

  it.each(['=1+1', '+A1', '-A1+2', '@SUM(A1)', '\t=1', '\r=1', '＝1+1'])('%j is a formula', (cell) => {
    expect(isFormulaCell(cell)).toBe(true);
  });

  it.each(['-5', '+1.5', '-1,234.5', '-12%', '-', '1e5', 'plain', ' =not evaluated'])('%j is data', (cell) => {
    expect(isFormulaCell(cell)).toBe(false);
  });

  it('caps the cells it lists but counts them all', () => {
    const csv = Array.from({ length: 100 }, () => '=1,=2').join('\n');
    const { cells, total } = findFormulaCells(csv, ',', 5);
    expect(cells).toHaveLength(5);
    expect(total).toBe(200);
  });

  it('names columns past Z', () => {
    expect([1, 26, 27, 52, 703].map(columnLetters)).toEqual(['A', 'Z', 'AA', 'AZ', 'AAA']);
  });
});

describe('SVG active content', () => {
  it('finds <script>, on* handlers and javascript: URLs with their line', () => {
    const svg = [
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">',
      '<script type="text/javascript">alert(1)</script>',
      '<rect onclick="steal()" width="1"/>',
      '<a xlink:href="jav&#x09;ascript:alert(2)"><text>x</text></a>',
      '<svg:script>x</svg:script>',
      '<image href="JavaScript&colon;alert(3)"/>',
      '</svg>',
    ].join('\n');
    const { hazards } = findSvgHazards(svg, 10);
    expect(hazards.map((h) => [h.what, h.line])).toEqual([
      ['script element', 2],
      ['event handler', 3],
      ['javascript URL', 4],
      ['script element', 5],
      ['javascript URL', 6],
    ]);
  });

  it('a plain SVG (and a comment mentioning onload) has none', () => {
    expect(findSvgHazards(Buffer.from(SAMPLES.svg).toString(), 10).total).toBe(0);
    expect(findSvgHazards('<svg><!-- onload=x --><text>onload=x</text></svg>', 10).total).toBe(0);
    expect(findSvgHazards('<svg/onload=alert(1)>', 10).total).toBe(1);
  });
});
