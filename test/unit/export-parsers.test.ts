import { deflateRawSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inspectArchive } from '../../harness/export/archive-inspect.js';
import { entryPrefix } from '../../harness/export/archive-data.js';
import { inspectContent } from '../../harness/export/content-inspect.js';
import { findFormulaCells } from '../../harness/export/csv-formula.js';
import { findSvgHazards } from '../../harness/export/svg-script.js';
import { sniffContentType } from '../../harness/export/content-type.js';
import { listTarEntries } from '../../harness/export/tar-reader.js';
import { listZipEntries } from '../../harness/export/zip-reader.js';
import { SAMPLES } from '../fixtures/export/samples.js';
import { makeTar } from '../fixtures/export/tar-writer.js';
import { makeZip, S_IFLNK } from '../fixtures/export/zip-writer.js';

const LIMITS = { maxEntries: 10_000, maxInflatedBytes: 8 * 1024 * 1024, maxReports: 50 };

/** Deterministic PRNG so a failing fuzz case can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('tar reader', () => {
  it('lists names, types, link targets and GNU long names', () => {
    const long = `${'x'.repeat(150)}/file.txt`;
    const tar = makeTar([
      { name: 'dir', type: 'dir' },
      { name: 'dir/a.txt', content: 'hello' },
      { name: 'l', type: 'symlink', linkName: '/etc/passwd' },
      { name: 'h', type: 'hardlink', linkName: 'dir/a.txt' },
      { name: 'c', type: 'char' },
      { name: 'f', type: 'fifo' },
      { name: long, content: 'long' },
    ]);
    const listing = listTarEntries(tar, { maxEntries: 100 });
    expect(listing.malformed).toBeUndefined();
    expect(listing.entries.map((e) => [e.name, e.type, e.linkTarget])).toEqual([
      ['dir', 'directory', undefined],
      ['dir/a.txt', 'file', undefined],
      ['l', 'symlink', '/etc/passwd'],
      ['h', 'hardlink', 'dir/a.txt'],
      ['c', 'char-device', undefined],
      ['f', 'fifo', undefined],
      [long, 'file', undefined],
    ]);
    const a = listing.entries[1];
    expect(a?.data && Buffer.from(tar.subarray(a.data.offset, a.data.offset + a.data.length)).toString()).toBe('hello');
  });

  it('applies pax paths and keeps the ustar name as an alternative', () => {
    const listing = listTarEntries(makeTar([{ name: 'real/name.txt', content: 'x', pax: { headerName: 'decoy.txt' } }]), { maxEntries: 10 });
    expect(listing.entries).toMatchObject([{ name: 'real/name.txt', altNames: ['decoy.txt'] }]);
  });

  it('stops at the entry cap and says so', () => {
    const listing = listTarEntries(makeTar(Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, content: 'x' }))), { maxEntries: 7 });
    expect(listing.entries).toHaveLength(7);
    expect(listing.truncated).toBe(true);
  });

  it('reports a size field pointing past the end instead of reading it', () => {
    const tar = Buffer.from(makeTar([{ name: 'a', content: 'x' }]));
    tar.write('77777777777\0', 124, 'latin1');
    let sum = 0;
    tar.write('        ', 148, 'latin1');
    for (let i = 0; i < 512; i++) sum += tar[i] ?? 0;
    tar.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    expect(listTarEntries(tar, { maxEntries: 10 }).malformed).toMatch(/runs past the end/);
  });
});

describe('zip reader', () => {
  it('lists names, symlinks (external attributes) and directories', () => {
    const zip = makeZip([
      { name: 'd/', mode: 0o040755 },
      { name: 'd/a.txt', content: 'a' },
      { name: 'link', content: '../../target', mode: S_IFLNK | 0o777 },
      { name: 'fifo', mode: 0o010644 },
    ]);
    const listing = listZipEntries(zip, { maxEntries: 100 });
    expect(listing.malformed).toBeUndefined();
    expect(listing.entries.map((e) => [e.name, e.type, e.linkTarget])).toEqual([
      ['d/', 'directory', undefined],
      ['d/a.txt', 'file', undefined],
      ['link', 'symlink', '../../target'],
      ['fifo', 'fifo', undefined],
    ]);
  });

  it('tolerates a trailing comment and finds the end record', () => {
    const zip = makeZip([{ name: 'a.txt', content: 'a' }]);
    const withComment = Buffer.concat([zip, Buffer.from('comment!')]);
    withComment.writeUInt16LE(8, zip.length - 2);
    expect(listZipEntries(withComment, { maxEntries: 10 }).entries.map((e) => e.name)).toEqual(['a.txt']);
  });

  it('reads a deflated entry prefix without inflating the whole entry', () => {
    const body = Buffer.alloc(1024 * 1024, 0x41);
    body.set(SAMPLES.elf, 0);
    const deflated = deflateRawSync(body);
    const archive = Buffer.concat([Buffer.alloc(7), deflated]);
    const head = entryPrefix(archive, { offset: 7, length: deflated.length, method: 'deflate' }, 16);
    expect(head?.bytes).toHaveLength(16);
    expect(head && Buffer.from(head.bytes).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  });
});

describe('parsers never hang or throw on garbage', () => {
  const valid = [
    makeTar([
      { name: 'a.txt', content: 'hello' },
      { name: 'l', type: 'symlink', linkName: 'x' },
      { name: `${'y'.repeat(120)}`, content: 'z' },
    ]),
    makeZip([
      { name: 'a.txt', content: 'hello' },
      { name: 'l', content: 'x', mode: S_IFLNK | 0o777 },
      { name: 'xl/vbaProject.bin', content: 'v' },
    ]),
    gzipSync(makeTar([{ name: 'a.txt', content: 'hello' }])),
  ];

  function exercise(bytes: Uint8Array): void {
    const t0 = performance.now();
    listTarEntries(bytes, { maxEntries: 100 });
    listZipEntries(bytes, { maxEntries: 100 });
    for (const type of ['tar', 'zip', 'gzip'] as const) inspectArchive(bytes, type, LIMITS, 'fuzz');
    sniffContentType(bytes);
    inspectContent('fuzz.csv', bytes, LIMITS);
    inspectContent('fuzz.svg', bytes, LIMITS);
    expect(performance.now() - t0).toBeLessThan(30_000); // only a hang (pathological backtracking) fails this
  }

  it('random bytes', () => {
    const rand = mulberry32(0x5a11d);
    for (let i = 0; i < 400; i++) {
      const len = Math.floor(rand() * 3000);
      const b = new Uint8Array(len);
      for (let j = 0; j < len; j++) b[j] = Math.floor(rand() * 256);
      // Plant magic numbers now and then so the deeper parsers run on garbage too.
      if (i % 4 === 1 && len > 4) b.set([0x50, 0x4b, 0x03, 0x04]);
      if (i % 4 === 2 && len > 22) b.set([0x50, 0x4b, 0x05, 0x06], len - 22);
      if (i % 4 === 3 && len > 262) b.set(Buffer.from('ustar\0'), 257);
      expect(() => exercise(b)).not.toThrow();
    }
  });

  it('mutated and truncated valid archives', () => {
    const rand = mulberry32(0xbad5eed);
    for (let i = 0; i < 600; i++) {
      const base = valid[i % valid.length] ?? new Uint8Array();
      const b = new Uint8Array(base);
      const flips = 1 + Math.floor(rand() * 8);
      for (let f = 0; f < flips; f++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      const cut = rand() < 0.3 ? b.subarray(0, Math.floor(rand() * b.length)) : b;
      expect(() => exercise(cut)).not.toThrow();
    }
  });

  it('pathological text finishes quickly (no regex backtracking blow-up)', () => {
    const inputs = [
      '<'.repeat(2_000_000),
      '<!--'.repeat(500_000),
      `<svg ${'a="'.repeat(300_000)}`,
      `<svg ${'a=\'b" '.repeat(300_000)}>`,
      `<svg><a href="${'&#x20;'.repeat(300_000)}javascript:x">`,
      `a,b\n1,-${'1'.repeat(2_000_000)}x\n`,
      `${'"'.repeat(1_000_001)}`,
      `${'a,'.repeat(1_000_000)}\n`,
    ];
    for (const s of inputs) {
      const t0 = performance.now();
      const bytes = new Uint8Array(Buffer.from(s));
      inspectContent('p.svg', bytes, LIMITS);
      inspectContent('p.csv', bytes, LIMITS);
      findSvgHazards(s, 50);
      findFormulaCells(s, ',', 50);
      expect(performance.now() - t0).toBeLessThan(30_000); // only a hang fails this
    }
  });

  it('a zip claiming 65535 entries and a huge directory is bounded by its own length', () => {
    const zip = Buffer.from(makeZip([{ name: 'a', content: 'a' }]));
    const eocd = zip.length - 22;
    zip.writeUInt16LE(0xfffe, eocd + 8);
    zip.writeUInt16LE(0xfffe, eocd + 10);
    const listing = listZipEntries(zip, { maxEntries: 10_000 });
    expect(listing.entries).toHaveLength(1);
    expect(listing.malformed).toMatch(/central directory entry 1/);
  });
});
