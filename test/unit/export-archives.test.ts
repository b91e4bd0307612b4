import { lstat, mkdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createNaiveExporter,
  createReferenceExporter,
  type ExportCandidate,
  isExportError,
  referenceExporter,
  type RefusalRule,
} from '../../harness/export/index.js';
import { file, LIMITS, listTree, SAMPLES, tempTree } from '../fixtures/export/samples.js';
import { makeTar } from '../fixtures/export/tar-writer.js';
import { makeZip, S_IFLNK } from '../fixtures/export/zip-writer.js';

let tree: Awaited<ReturnType<typeof tempTree>>;
let workspace: string;
let decoy: string;
const CANARY = `SCNRY-decoy-${Math.random().toString(36).slice(2)}`;

beforeEach(async () => {
  tree = await tempTree();
  workspace = join(tree.root, 'workspace');
  await mkdir(workspace);
  await mkdir(join(tree.root, 'decoy'));
  decoy = join(tree.root, 'decoy', 'secret.txt');
  await writeFile(decoy, CANARY);
});
afterEach(async () => {
  await tree.cleanup();
});

const naive = (): ReturnType<typeof createNaiveExporter> => createNaiveExporter({ workspaceRoot: workspace, confineTo: tree.root });

async function expectReferenceRefuses(candidate: ExportCandidate, rule: RefusalRule, entry: string): Promise<void> {
  const decision = await referenceExporter.export([candidate], LIMITS, tree.dest);
  expect(decision.accepted).toBe(false);
  const refusal = decision.refusals.find((r) => r.rule === rule);
  expect(refusal, JSON.stringify(decision.refusals)).toBeDefined();
  expect(refusal?.path).toBe(candidate.path);
  expect(refusal?.detail).toContain(JSON.stringify(entry));
  expect(await listTree(tree.dest)).toEqual([]);
}

describe('archive traversal: refused by the reference exporter, crossing with the naive one', () => {
  it('tar entry ../../evil', async () => {
    const tar = file(
      'out.tar',
      makeTar([
        { name: 'ok.txt', content: 'fine' },
        { name: '../../evil', content: 'EVIL-TAR' },
      ]),
    );
    await expectReferenceRefuses(tar, 'archive-escape', '../../evil');
    await naive().export([tar], LIMITS, tree.dest);
    expect(await readFile(join(tree.root, 'a', 'evil'), 'utf8')).toBe('EVIL-TAR');
  });

  it('tar entry /etc/evil (naive extracts it, relative to destDir for the host’s sake)', async () => {
    const tar = file('out.tar', makeTar([{ name: '/etc/evil', content: 'ABS' }]));
    await expectReferenceRefuses(tar, 'archive-absolute', '/etc/evil');
    const decision = await naive().export([tar], LIMITS, tree.dest);
    expect(decision.exported.map((e) => e.path)).toContain('etc/evil');
    expect(await readFile(join(tree.dest, 'etc', 'evil'), 'utf8')).toBe('ABS');
  });

  it('archive-symlink-then-write: a tar symlink entry, then a file written through it', async () => {
    const outside = join(tree.root, 'outside');
    await mkdir(outside);
    const tar = file(
      'out.tar',
      makeTar([
        { name: 'link', type: 'symlink', linkName: '../../../outside' },
        { name: 'link/evil.txt', content: 'THROUGH-LINK' },
      ]),
    );
    await expectReferenceRefuses(tar, 'archive-symlink', 'link');
    await naive().export([tar], LIMITS, tree.dest);
    expect(await readFile(join(outside, 'evil.txt'), 'utf8')).toBe('THROUGH-LINK');
  });

  it('tar hardlink entry to a host file, then a write into it, changes the host file', async () => {
    const tar = file(
      'out.tar',
      makeTar([
        { name: 'hl', type: 'hardlink', linkName: '../../../decoy/secret.txt' },
        { name: 'hl', content: 'CLOBBERED' },
      ]),
    );
    await expectReferenceRefuses(tar, 'archive-hardlink', 'hl');
    await naive().export([tar], LIMITS, tree.dest);
    expect(await readFile(decoy, 'utf8')).toBe('CLOBBERED');
  });

  it('zip-slip ../../evil.txt', async () => {
    const zip = file(
      'out.zip',
      makeZip([
        { name: 'fine.txt', content: 'ok' },
        { name: '../../evil.txt', content: 'EVIL-ZIP' },
      ]),
    );
    await expectReferenceRefuses(zip, 'archive-escape', '../../evil.txt');
    await naive().export([zip], LIMITS, tree.dest);
    expect(await readFile(join(tree.root, 'a', 'evil.txt'), 'utf8')).toBe('EVIL-ZIP');
  });

  it('zip symlink entry to a host decoy: the naive export hands out the decoy', async () => {
    const zip = file('out.zip', makeZip([{ name: 'leak', content: decoy, mode: S_IFLNK | 0o777 }]));
    await expectReferenceRefuses(zip, 'archive-symlink', 'leak');
    await naive().export([zip], LIMITS, tree.dest);
    expect(await readlink(join(tree.dest, 'leak'))).toBe(decoy);
    expect(await readFile(join(tree.dest, 'leak'), 'utf8')).toBe(CANARY);
  });

  it('zip symlink entry then a file written through it', async () => {
    const outside = join(tree.root, 'outside');
    await mkdir(outside);
    const zip = file(
      'out.zip',
      makeZip([
        { name: 'd', content: outside, mode: S_IFLNK | 0o777 },
        { name: 'd/evil.txt', content: 'ZIP-THROUGH' },
      ]),
    );
    await expectReferenceRefuses(zip, 'archive-symlink', 'd');
    await naive().export([zip], LIMITS, tree.dest);
    expect(await readFile(join(outside, 'evil.txt'), 'utf8')).toBe('ZIP-THROUGH');
  });

  it('tar.gz with ../../evil is inspected through the gzip layer', async () => {
    const tgz = file('out.tar.gz', gzipSync(makeTar([{ name: '../../evil-gz', content: 'GZ' }])));
    await expectReferenceRefuses(tgz, 'archive-escape', '../../evil-gz');
    await naive().export([tgz], LIMITS, tree.dest);
    expect(await readFile(join(tree.root, 'a', 'evil-gz'), 'utf8')).toBe('GZ');
  });
});

describe('link candidates: refused by the reference exporter, crossing with the naive one', () => {
  it('a symlink candidate to a host decoy: naive exports the decoy content', async () => {
    const link: ExportCandidate = { path: 'result.txt', kind: 'symlink', size: decoy.length, linkTarget: decoy };
    const ref = await referenceExporter.export([link], LIMITS, tree.dest);
    expect(ref.refusals.map((r) => r.rule)).toEqual(['kind-symlink']);
    expect(ref.refusals[0]?.detail).toContain(decoy);
    const decision = await naive().export([link], LIMITS, tree.dest);
    expect(decision.accepted).toBe(true);
    expect(await readFile(join(tree.dest, 'result.txt'), 'utf8')).toBe(CANARY);
  });

  it('a relative symlink candidate is resolved against the link’s directory in the workspace', async () => {
    const link: ExportCandidate = { path: 'sub/result.txt', kind: 'symlink', size: 1, linkTarget: '../../decoy/secret.txt' };
    await naive().export([link], LIMITS, tree.dest);
    expect(await readFile(join(tree.dest, 'sub', 'result.txt'), 'utf8')).toBe(CANARY);
  });

  it('a hardlinked file (nlink 2) is copied by the naive exporter', async () => {
    const hl = file('copy.txt', CANARY, { nlink: 2 });
    expect((await referenceExporter.export([hl], LIMITS, tree.dest)).refusals.map((r) => r.rule)).toEqual(['kind-hardlink']);
    await naive().export([hl], LIMITS, tree.dest);
    expect(await readFile(join(tree.dest, 'copy.txt'), 'utf8')).toBe(CANARY);
  });

  it('a fifo candidate is refused by the reference and skipped by the naive exporter', async () => {
    const fifo: ExportCandidate = { path: 'pipe', kind: 'fifo', size: 0 };
    expect((await referenceExporter.export([fifo], LIMITS, tree.dest)).refusals.map((r) => r.rule)).toEqual(['kind-fifo']);
    expect((await naive().export([fifo], LIMITS, tree.dest)).exported).toEqual([]);
  });

  it('the naive exporter refuses a destDir shallower than 3 levels, and anything outside confineTo', async () => {
    const shallow = await naive()
      .export([], LIMITS, join(tree.root, 'x'))
      .catch((e: unknown) => e);
    expect(isExportError(shallow, 'EXPORT_NAIVE_CONFINEMENT')).toBe(true);
    const far = file('out.tar', makeTar([{ name: '../../../../../../../../../../../../sandcheck-never-here', content: 'x' }]));
    const err = await naive()
      .export([far], LIMITS, tree.dest)
      .catch((e: unknown) => e);
    expect(isExportError(err, 'EXPORT_NAIVE_CONFINEMENT')).toBe(true);
    const farLink = file('l.zip', makeZip([{ name: 'l', content: '/etc', mode: S_IFLNK | 0o777 }]));
    expect(
      isExportError(
        await naive()
          .export([farLink], LIMITS, tree.dest)
          .catch((e: unknown) => e),
        'EXPORT_NAIVE_CONFINEMENT',
      ),
    ).toBe(true);
    const outsideRead: ExportCandidate = { path: 'r.txt', kind: 'symlink', size: 1, linkTarget: '/etc/hostname' };
    expect(
      isExportError(
        await naive()
          .export([outsideRead], LIMITS, tree.dest)
          .catch((e: unknown) => e),
        'EXPORT_NAIVE_CONFINEMENT',
      ),
    ).toBe(true);
  });
});

describe('archive inspection by the reference exporter', () => {
  const refusalRules = async (candidate: ExportCandidate, exporter = referenceExporter): Promise<RefusalRule[]> =>
    (await exporter.export([candidate], LIMITS, tree.dest)).refusals.map((r) => r.rule);

  it('accepts a clean tar, zip and tar.gz, written byte-identical and never extracted', async () => {
    const tar = makeTar([
      { name: 'dir', type: 'dir' },
      { name: 'dir/a.txt', content: 'a' },
    ]);
    const candidates = [file('a.tar', tar), file('b.zip', makeZip([{ name: 'x/y.txt', content: 'y' }])), file('c.tgz', gzipSync(tar))];
    const decision = await referenceExporter.export(candidates, LIMITS, tree.dest);
    expect(decision.refusals).toEqual([]);
    expect(await listTree(tree.dest)).toEqual(['a.tar', 'b.zip', 'c.tgz']);
    expect(Buffer.compare(await readFile(join(tree.dest, 'a.tar')), tar)).toBe(0);
  });

  it('GNU long names and pax paths are judged by the name an extractor would use', async () => {
    const long = `${'d/'.repeat(60)}${'../'.repeat(61)}evil`;
    expect(await refusalRules(file('long.tar', makeTar([{ name: long, content: 'x' }])))).toContain('archive-escape');
    const pax = await referenceExporter.export(
      [file('pax.tar', makeTar([{ name: '../pax-evil', content: 'x', pax: { headerName: 'innocent.txt' } }]))],
      LIMITS,
      tree.dest,
    );
    expect(pax.refusals.map((r) => r.rule)).toEqual(['archive-escape']);
    // The other way round: an extractor ignoring pax would use the ustar name.
    const ustar = await referenceExporter.export(
      [file('pax2.tar', makeTar([{ name: 'innocent.txt', content: 'x', pax: { headerName: '../ustar-evil' } }]))],
      LIMITS,
      tree.dest,
    );
    expect(ustar.refusals.map((r) => r.rule)).toEqual(['archive-escape']);
    // A legitimate long name is not a mismatch.
    const fine = await referenceExporter.export([file('long-ok.tar', makeTar([{ name: `${'x'.repeat(150)}/ok.txt`, content: 'x' }]))], LIMITS, tree.dest);
    expect(fine.refusals).toEqual([]);
  });

  it('zip names with backslashes, drive letters and absolute paths', async () => {
    expect(await refusalRules(file('a.zip', makeZip([{ name: '..\\..\\evil.txt', content: 'x' }])))).toContain('archive-escape');
    expect(await refusalRules(file('b.zip', makeZip([{ name: 'C:/Windows/evil.txt', content: 'x' }])))).toContain('archive-absolute');
    expect(await refusalRules(file('c.zip', makeZip([{ name: '/etc/evil', content: 'x' }])))).toContain('archive-absolute');
    expect(await refusalRules(file('d.zip', makeZip([{ name: '\\\\server\\share\\x', content: 'x' }])))).toContain('archive-absolute');
  });

  it('a zip whose local header names a different path than the central directory', async () => {
    const zip = makeZip([{ name: 'safe.txt', localName: '../../evil.txt', content: 'x' }]);
    expect(await refusalRules(file('m.zip', zip))).toEqual(expect.arrayContaining(['archive-name-mismatch', 'archive-escape']));
  });

  it('a zip whose Unicode Path extra field names a different path', async () => {
    const zip = makeZip([{ name: 'safe.txt', unicodePath: '../../evil.txt', content: 'x' }]);
    const decision = await referenceExporter.export([file('u.zip', zip)], LIMITS, tree.dest);
    expect(decision.refusals.map((r) => r.rule)).toEqual(['archive-escape']);
    expect(decision.refusals[0]?.detail).toContain('"../../evil.txt"');
  });

  it('running out of the sniff budget refuses the archive (unchecked entries could hide an executable)', async () => {
    const tar = makeTar(Array.from({ length: 4 }, (_, i) => ({ name: `f${i}.txt`, content: 'abcdefgh' })));
    expect(await refusalRules(file('t.tar', tar), createReferenceExporter({ maxInflatedBytes: 1024 * 1024 }))).toEqual([]);
    expect(await refusalRules(file('t.tar', tar), createReferenceExporter({ maxInflatedBytes: 16 }))).toEqual(['archive-too-large']);
  });

  it('tar device and fifo entries', async () => {
    const tar = makeTar([
      { name: 'null', type: 'char' },
      { name: 'p', type: 'fifo' },
    ]);
    const rules = await refusalRules(file('dev.tar', tar));
    expect(rules.filter((r) => r === 'archive-special')).toHaveLength(2);
  });

  it('caps the number of entries', async () => {
    const tar = makeTar(Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, content: 'x' })));
    expect(await refusalRules(file('many.tar', tar), createReferenceExporter({ maxArchiveEntries: 5 }))).toEqual(['archive-too-many-entries']);
    expect(await refusalRules(file('many.tar', tar), createReferenceExporter({ maxArchiveEntries: 6 }))).toEqual([]);
  });

  it('a gzip that inflates past the budget is refused as unverifiable', async () => {
    const bomb = gzipSync(new Uint8Array(4 * 1024 * 1024));
    expect(await refusalRules(file('bomb.gz', bomb), createReferenceExporter({ maxInflatedBytes: 1024 * 1024 }))).toEqual(['archive-too-large']);
  });

  it('a damaged archive is refused, not trusted', async () => {
    const zip = makeZip([{ name: 'a.txt', content: 'a' }]);
    const cut = zip.subarray(0, zip.length - 10);
    expect(await refusalRules(file('cut.zip', cut))).toEqual(['archive-malformed']);
    const tar = Buffer.from(makeTar([{ name: 'a.txt', content: 'a' }]));
    tar[0] = 0x41; // breaks the header checksum
    expect(await refusalRules(file('bad.tar', tar))).toEqual(['archive-malformed']);
  });

  it('a deflated executable entry is found too; encrypted and unknown-method entries are unverifiable', async () => {
    const deflated = await referenceExporter.export([file('d.zip', makeZip([{ name: 'x.dat', content: SAMPLES.elf, deflate: true }]))], LIMITS, tree.dest);
    expect(deflated.findings.map((f) => [f.kind, f.location])).toEqual([['executable', 'entry x.dat']]);
    expect(await refusalRules(file('e.zip', makeZip([{ name: 'a.txt', content: 'x', encrypted: true }])))).toEqual(['archive-uninspectable']);
    expect(await refusalRules(file('m.zip', makeZip([{ name: 'a.txt', content: 'x', method: 12 }])))).toEqual(['archive-uninspectable']);
    const clean = await referenceExporter.export(
      [file('ok.zip', makeZip([{ name: 'a.txt', content: 'hello '.repeat(100), deflate: true }]))],
      LIMITS,
      tree.dest,
    );
    expect(clean.accepted).toBe(true);
  });

  it('the naive exporter inflates deflated zip entries when it extracts', async () => {
    await naive().export([file('d.zip', makeZip([{ name: '../../deflated-evil.txt', content: 'DEFLATED', deflate: true }]))], LIMITS, tree.dest);
    expect(await readFile(join(tree.root, 'a', 'deflated-evil.txt'), 'utf8')).toBe('DEFLATED');
  });

  it('an executable inside an archive is a finding with its entry', async () => {
    const decision = await referenceExporter.export([file('tools.zip', makeZip([{ name: 'bin/tool', content: SAMPLES.elf }]))], LIMITS, tree.dest);
    expect(decision.findings).toEqual([{ path: 'tools.zip', kind: 'executable', detail: expect.stringContaining('elf'), location: 'entry bin/tool' }]);
    expect(decision.refusals.map((r) => r.rule)).toEqual(['finding-executable']);
  });
});

describe('OOXML', () => {
  const workbook = (extra: { name: string; content: string }[] = []): Buffer =>
    makeZip([{ name: '[Content_Types].xml', content: '<?xml version="1.0"?><Types/>' }, { name: 'xl/workbook.xml', content: '<workbook/>' }, ...extra]);

  it('an .xlsx without macros is accepted as xlsx', async () => {
    const decision = await referenceExporter.export([file('book.xlsx', workbook())], { ...LIMITS, allowedTypes: ['xlsx'] }, tree.dest);
    expect(decision.refusals).toEqual([]);
    expect(decision.accepted).toBe(true);
  });

  it('an .xlsx carrying xl/vbaProject.bin is a macro finding with its entry, refused', async () => {
    const decision = await referenceExporter.export([file('book.xlsx', workbook([{ name: 'xl/vbaProject.bin', content: 'VBA' }]))], LIMITS, tree.dest);
    expect(decision.findings).toEqual([
      { path: 'book.xlsx', kind: 'macro', detail: expect.stringContaining('xl/vbaProject.bin'), location: 'entry xl/vbaProject.bin' },
    ]);
    expect(decision.refusals.map((r) => r.rule)).toEqual(['finding-macro']);
    expect(await listTree(tree.dest)).toEqual([]);
  });

  it('a vbaProject.bin anywhere in any zip is a macro finding', async () => {
    const decision = await referenceExporter.export([file('x.zip', makeZip([{ name: 'word/vbaProject.bin', content: 'VBA' }]))], LIMITS, tree.dest);
    expect(decision.findings.map((f) => f.location)).toEqual(['entry word/vbaProject.bin']);
  });

  it('a .docx posing as .xlsx is a type mismatch', async () => {
    const docx = makeZip([
      { name: '[Content_Types].xml', content: '<Types/>' },
      { name: 'word/document.xml', content: '<document/>' },
    ]);
    expect((await referenceExporter.export([file('book.xlsx', docx)], LIMITS, tree.dest)).refusals.map((r) => r.rule)).toEqual(['type-mismatch']);
  });
});

it('keeps the naive exporter’s crossings inside the temp tree', async () => {
  const zip = file('out.zip', makeZip([{ name: '../../evil.txt', content: 'x' }]));
  await naive().export([zip], LIMITS, tree.dest);
  expect((await lstat(join(tree.root, 'a', 'evil.txt'))).isFile()).toBe(true);
});
