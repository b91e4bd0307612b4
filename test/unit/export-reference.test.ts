import { lstat, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createReferenceExporter,
  type ExportCandidate,
  ExportDecisionSchema,
  type ExportLimits,
  isExportError,
  referenceExporter,
  type RefusalRule,
  WHOLE_SET,
} from '../../harness/export/index.js';
import { file, LIMITS, listTree, MB, SAMPLES, sha256, tempTree } from '../fixtures/export/samples.js';

let tree: Awaited<ReturnType<typeof tempTree>>;
beforeEach(async () => {
  tree = await tempTree();
});
afterEach(async () => {
  await tree.cleanup();
});

async function expectRefusedNothingWritten(candidates: ExportCandidate[], rule: RefusalRule, limits: ExportLimits = LIMITS): Promise<string> {
  const decision = await referenceExporter.export(candidates, limits, tree.dest);
  expect(ExportDecisionSchema.parse(decision)).toEqual(decision);
  expect(decision.accepted).toBe(false);
  expect(decision.exported).toEqual([]);
  expect(decision.refusals.map((r) => r.rule)).toContain(rule);
  expect(await listTree(tree.dest)).toEqual([]);
  const refusal = decision.refusals.find((r) => r.rule === rule);
  expect(refusal?.detail.length).toBeGreaterThan(0);
  return refusal?.detail ?? '';
}

describe('reference exporter: allowed sets', () => {
  it('writes an allowed set byte-identical, with sha256 in the decision', async () => {
    const candidates = [
      file('plot.png', SAMPLES.png),
      file('photo.jpg', SAMPLES.jpeg),
      file('anim.gif', SAMPLES.gif),
      file('report.pdf', SAMPLES.pdf),
      file('data/results.csv', SAMPLES.csv),
      file('data/deep/summary.json', SAMPLES.json),
      file('./notes.txt', SAMPLES.text),
      file('chart.svg', SAMPLES.svg),
      file('empty.txt', ''),
    ];
    const decision = await referenceExporter.export(candidates, LIMITS, tree.dest);
    expect(ExportDecisionSchema.parse(decision)).toEqual(decision);
    expect(decision.refusals).toEqual([]);
    expect(decision.findings).toEqual([]);
    expect(decision.accepted).toBe(true);
    expect(decision.exported.map((e) => e.path)).toEqual([
      'plot.png',
      'photo.jpg',
      'anim.gif',
      'report.pdf',
      'data/results.csv',
      'data/deep/summary.json',
      'notes.txt',
      'chart.svg',
      'empty.txt',
    ]);
    for (const [i, e] of decision.exported.entries()) {
      const onDisk = await readFile(join(tree.dest, e.path));
      const input = candidates[i]?.content ?? new Uint8Array();
      expect(Buffer.compare(onDisk, input)).toBe(0);
      expect(e.sha256).toBe(sha256(onDisk));
      expect(e.bytes).toBe(input.length);
      expect((await stat(join(tree.dest, e.path))).mode & 0o111).toBe(0);
    }
  });

  it('folds inner ".." that stays inside the root', async () => {
    const decision = await referenceExporter.export([file('x/../y/z.txt', 'ok')], LIMITS, tree.dest);
    expect(decision.accepted).toBe(true);
    expect(decision.exported[0]?.path).toBe('y/z.txt');
    expect(await readFile(join(tree.dest, 'y/z.txt'), 'utf8')).toBe('ok');
  });

  it('accepts exactly 20 files and exactly 40 MB (the limits are inclusive)', async () => {
    const twenty = Array.from({ length: 20 }, (_, i) => file(`f${i}.txt`, `file ${i}\n`));
    expect((await referenceExporter.export(twenty, LIMITS, join(tree.dest, 'count'))).accepted).toBe(true);
    const big = new Uint8Array(5 * MB).fill(0x61);
    const eight = Array.from({ length: 8 }, (_, i) => file(`big${i}.txt`, big));
    const decision = await referenceExporter.export(eight, LIMITS, join(tree.dest, 'size'));
    expect(decision.accepted).toBe(true);
    expect(decision.exported.reduce((s, e) => s + e.bytes, 0)).toBe(40 * MB);
  });
});

describe('reference exporter: each rule refuses with its reason and writes nothing', () => {
  const good = (): ExportCandidate => file('good.txt', 'fine\n');
  const cases: { name: string; candidate: () => ExportCandidate; rule: RefusalRule; limits?: ExportLimits }[] = [
    { name: 'absolute path', candidate: () => file('/etc/x', 'a'), rule: 'path-absolute' },
    { name: 'drive-letter path', candidate: () => file('C:/x.txt', 'a'), rule: 'path-absolute' },
    { name: '.. escaping', candidate: () => file('../x.txt', 'a'), rule: 'path-escape' },
    { name: 'inner .. escaping', candidate: () => file('a/../../b.txt', 'a'), rule: 'path-escape' },
    { name: 'empty path', candidate: () => file('', 'a'), rule: 'path-empty' },
    { name: 'path naming the root', candidate: () => file('a/..', 'a'), rule: 'path-empty' },
    { name: 'NUL in path', candidate: () => file('x.txt\0.png', 'a'), rule: 'path-nul' },
    { name: 'backslash trick', candidate: () => file('..\\..\\x.txt', 'a'), rule: 'path-backslash' },
    { name: 'control character', candidate: () => file('x\n.txt', 'a'), rule: 'path-control-char' },
    { name: 'overlong segment', candidate: () => file(`${'x'.repeat(300)}.txt`, 'a'), rule: 'path-too-long' },
    { name: 'directory as artifact', candidate: () => ({ path: 'dir', kind: 'directory', size: 0 }), rule: 'kind-directory' },
    { name: 'symlink', candidate: () => ({ path: 'link.txt', kind: 'symlink', size: 11, linkTarget: '/etc/passwd' }), rule: 'kind-symlink' },
    { name: 'hardlink kind', candidate: () => ({ path: 'hl.txt', kind: 'hardlink', size: 1 }), rule: 'kind-hardlink' },
    { name: 'regular file with nlink 2', candidate: () => file('hl.txt', 'secret', { nlink: 2 }), rule: 'kind-hardlink' },
    { name: 'fifo', candidate: () => ({ path: 'pipe', kind: 'fifo', size: 0 }), rule: 'kind-fifo' },
    { name: 'socket', candidate: () => ({ path: 'sock', kind: 'socket', size: 0 }), rule: 'kind-socket' },
    { name: 'device', candidate: () => ({ path: 'dev', kind: 'device', size: 0 }), rule: 'kind-device' },
    { name: 'other', candidate: () => ({ path: 'door', kind: 'other', size: 0 }), rule: 'kind-other' },
    { name: 'missing', candidate: () => ({ path: 'gone.txt', kind: 'missing', size: 0 }), rule: 'kind-missing' },
    { name: 'content not delivered', candidate: () => ({ path: 'x.txt', kind: 'file', size: 10 }), rule: 'content-missing' },
    { name: 'size mismatch', candidate: () => file('x.txt', 'abc', { size: 2 }), rule: 'size-mismatch' },
    { name: 'file over the per-file cap', candidate: () => ({ path: 'big.bin', kind: 'file', size: 5 * MB + 1 }), rule: 'file-too-large' },
    { name: '.csv that is ELF (type smuggling)', candidate: () => file('results.csv', SAMPLES.elf), rule: 'type-mismatch' },
    { name: '.png that is text', candidate: () => file('plot.png', 'not a png'), rule: 'type-mismatch' },
    { name: '.json that does not parse', candidate: () => file('x.json', '{"a":'), rule: 'type-mismatch' },
    {
      name: 'type not allowed',
      candidate: () => file('plot.png', SAMPLES.png),
      rule: 'type-not-allowed',
      limits: { ...LIMITS, allowedTypes: ['csv', 'json'] },
    },
    { name: 'ELF executable', candidate: () => file('tool', SAMPLES.elf), rule: 'finding-executable' },
    { name: 'PE executable', candidate: () => file('tool.bin', SAMPLES.pe), rule: 'finding-executable' },
    { name: 'Mach-O executable', candidate: () => file('tool.dat', SAMPLES.macho), rule: 'finding-executable' },
    { name: 'shebang script', candidate: () => file('run', SAMPLES.script), rule: 'finding-script' },
    { name: 'formula injection', candidate: () => file('out.csv', 'a,b\n1,=HYPERLINK("http://x")\n'), rule: 'finding-formula-injection' },
    { name: 'SVG with script', candidate: () => file('x.svg', '<svg><script>alert(1)</script></svg>'), rule: 'finding-svg-script' },
    {
      name: 'xz (cannot be listed)',
      candidate: () => file('x.bin', new Uint8Array([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 1, 2])),
      rule: 'archive-uninspectable',
    },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.rule}`, async () => {
      const candidate = c.candidate();
      const detail = await expectRefusedNothingWritten([good(), candidate], c.rule, c.limits);
      expect(detail).not.toBe('');
    });
  }

  it('refuses two paths landing on the same name, and a file used as a directory', async () => {
    await expectRefusedNothingWritten([file('a/x.txt', '1'), file('a/./x.txt', '2')], 'path-duplicate');
    await expectRefusedNothingWritten([file('Report.txt', '1'), file('report.txt', '2')], 'path-duplicate');
    await expectRefusedNothingWritten([file('a', '1'), file('a/b.txt', '2')], 'path-conflict');
  });

  it('refuses 21 files by count', async () => {
    const files = Array.from({ length: 21 }, (_, i) => file(`f${i}.txt`, `file ${i}\n`));
    const detail = await expectRefusedNothingWritten(files, 'too-many-files');
    expect(detail).toContain('21');
  });

  it('refuses 9 × 5 MB by aggregate although each file is within 5 MB', async () => {
    const big = new Uint8Array(5 * MB).fill(0x62);
    const files = Array.from({ length: 9 }, (_, i) => file(`big${i}.txt`, big));
    const decision = await referenceExporter.export(files, LIMITS, tree.dest);
    expect(decision.accepted).toBe(false);
    expect(decision.refusals).toEqual([{ path: WHOLE_SET, rule: 'total-too-large', detail: expect.stringContaining(String(45 * MB)) }]);
    expect(await listTree(tree.dest)).toEqual([]);
  });

  it('returns every reason, not just the first', async () => {
    const files = [
      ...Array.from({ length: 20 }, (_, i) => file(`f${i}.txt`, 'x')),
      file('../up.txt', 'x'),
      { path: 'l', kind: 'symlink', size: 1, linkTarget: '/' } satisfies ExportCandidate,
      file('evil.csv', SAMPLES.elf),
    ];
    const decision = await referenceExporter.export(files, LIMITS, tree.dest);
    const rules = decision.refusals.map((r) => r.rule);
    expect(rules).toEqual(expect.arrayContaining(['too-many-files', 'path-escape', 'kind-symlink', 'type-mismatch', 'finding-executable']));
    expect(decision.findings.map((f) => f.kind)).toContain('executable');
    expect(await listTree(tree.dest)).toEqual([]);
  });
});

describe('reference exporter: options', () => {
  it('reports findings even when they are configured not to refuse', async () => {
    const lax = createReferenceExporter({ refuseFindings: { 'formula-injection': false, 'svg-script': false } });
    const decision = await lax.export([file('out.csv', "a,b,c\n1,2,=cmd|' /C calc'!A0\n"), file('x.svg', '<svg onload="alert(1)"/>')], LIMITS, tree.dest);
    expect(decision.accepted).toBe(true);
    expect(decision.findings).toEqual([
      { path: 'out.csv', kind: 'formula-injection', detail: expect.stringContaining('=cmd'), location: 'row 2, column 3 (C2)' },
      { path: 'x.svg', kind: 'svg-script', detail: expect.stringContaining('onload'), location: 'line 1' },
    ]);
    expect(await listTree(tree.dest)).toEqual(['out.csv', 'x.svg']);
  });

  it('macros and executables still refuse under a lax formula setting', async () => {
    const lax = createReferenceExporter({ refuseFindings: { 'formula-injection': false } });
    const decision = await lax.export([file('tool', SAMPLES.elf)], LIMITS, tree.dest);
    expect(decision.refusals.map((r) => r.rule)).toEqual(['finding-executable']);
  });

  it('allowMissing skips declared artifacts that do not exist', async () => {
    const exporter = createReferenceExporter({ allowMissing: true });
    const decision = await exporter.export([{ path: 'gone.txt', kind: 'missing', size: 0 }, file('here.txt', 'x')], LIMITS, tree.dest);
    expect(decision.accepted).toBe(true);
    expect(decision.exported.map((e) => e.path)).toEqual(['here.txt']);
  });

  it('allowedTypes admits subtypes of an allowed parent type, judged by content', async () => {
    const limits = { ...LIMITS, allowedTypes: ['text', 'png'] };
    const ok = await referenceExporter.export([file('a.csv', SAMPLES.csv), file('b.json', SAMPLES.json), file('c.png', SAMPLES.png)], limits, tree.dest);
    expect(ok.accepted).toBe(true);
    const bad = await referenceExporter.export([file('d.txt', SAMPLES.gif)], limits, join(tree.dest, 'second'));
    expect(bad.refusals.map((r) => r.rule)).toEqual(['type-mismatch', 'type-not-allowed']);
  });

  it('rejects malformed limits as a harness error, before anything happens', async () => {
    await expect(referenceExporter.export([], { maxFiles: -1, maxFileBytes: 1, maxTotalBytes: 1 }, tree.dest)).rejects.toSatisfy((e) =>
      isExportError(e, 'EXPORT_INPUT_INVALID'),
    );
    await expect(referenceExporter.export([], { ...LIMITS, allowedTypes: ['nonsense'] }, tree.dest)).rejects.toSatisfy((e) =>
      isExportError(e, 'EXPORT_INPUT_INVALID'),
    );
  });
});

describe('reference exporter: writing into destDir', () => {
  it('never follows a symlink that already sits in destDir (directory component), and rolls back', async () => {
    const outside = join(tree.root, 'outside');
    await mkdir(outside);
    await symlink(outside, join(tree.dest, 'sub'));
    const err = await referenceExporter.export([file('first.txt', '1'), file('sub/x.txt', 'escaped')], LIMITS, tree.dest).catch((e: unknown) => e);
    expect(isExportError(err, 'EXPORT_DEST_UNSAFE')).toBe(true);
    expect(await listTree(outside)).toEqual([]);
    expect(await listTree(tree.dest)).toEqual(['sub']);
  });

  it('never follows a symlink at the final name', async () => {
    const victim = join(tree.root, 'victim.txt');
    await writeFile(victim, 'original');
    await symlink(victim, join(tree.dest, 'x.txt'));
    const err = await referenceExporter.export([file('x.txt', 'overwritten')], LIMITS, tree.dest).catch((e: unknown) => e);
    expect(isExportError(err, 'EXPORT_DEST_UNSAFE')).toBe(true);
    expect(await readFile(victim, 'utf8')).toBe('original');
    expect((await lstat(join(tree.dest, 'x.txt'))).isSymbolicLink()).toBe(true);
  });

  it('never overwrites an existing file (O_EXCL), and removes what it wrote before failing', async () => {
    await writeFile(join(tree.dest, 'b.txt'), 'already here');
    const err = await referenceExporter.export([file('a/a.txt', 'new'), file('b.txt', 'new')], LIMITS, tree.dest).catch((e: unknown) => e);
    expect(isExportError(err, 'EXPORT_DEST_EXISTS')).toBe(true);
    expect(await readFile(join(tree.dest, 'b.txt'), 'utf8')).toBe('already here');
    expect(await listTree(tree.dest)).toEqual(['b.txt']);
  });

  it('creates destDir when it does not exist yet', async () => {
    const fresh = join(tree.dest, 'not', 'yet');
    const decision = await referenceExporter.export([file('x.txt', 'x')], LIMITS, fresh);
    expect(decision.accepted).toBe(true);
    expect(await readFile(join(fresh, 'x.txt'), 'utf8')).toBe('x');
  });
});
