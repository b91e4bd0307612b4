import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checked } from '../../backends/docker/image.js';
import { packEntries, packStream, readWantedEntries } from '../../backends/docker/tar.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sc-pack-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const collect = async (r: Readable): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

describe('the probe image tar is streamed, never held', () => {
  it('a file named by its source packs to the same bytes as its content', async () => {
    const big = Buffer.alloc(3 * 2 ** 20, 0x61);
    await writeFile(join(dir, 'big'), big);
    const base = { type: 'file' as const, mode: 0o644, uid: 0, gid: 0 };
    const lazy = await collect(
      packStream([
        { name: 'a', ...base, content: Buffer.from('first') },
        { name: 'big', ...base, source: join(dir, 'big') },
      ]),
    );
    const held = await packEntries([
      { name: 'a', ...base, content: Buffer.from('first') },
      { name: 'big', ...base, content: big },
    ]);
    expect(Buffer.compare(lazy, held)).toBe(0);
    const read = await readWantedEntries(Readable.from([lazy]), new Set(['big']), { maxContentBytes: 4 * 2 ** 20, maxArchiveBytes: 8 * 2 ** 20 });
    expect(read.get('big')?.content?.byteLength).toBe(big.byteLength);
  });

  it('a source that cannot be read fails the stream instead of packing an empty file', async () => {
    const s = packStream([{ name: 'gone', type: 'file', mode: 0o644, uid: 0, gid: 0, source: join(dir, 'no-such-file') }]);
    await expect(collect(s)).rejects.toThrow(/ENOENT/);
  });

  it('the second pass fails at its end where its bytes no longer hash to the tag (a file changed in between)', async () => {
    const bytes = Buffer.from('the same bytes twice');
    const hash = createHash('sha256').update(bytes).digest('hex');
    expect(await collect(checked(Readable.from([bytes]), hash))).toEqual(bytes);
    await expect(collect(checked(Readable.from([Buffer.from('other bytes')]), hash))).rejects.toThrow(/changed while the probe image was built/);
    // The last chunk (the archive's end) is held back until the hash matched: a reader never gets a whole archive of other bytes.
    const got: Buffer[] = [];
    await expect(
      (async () => {
        for await (const c of checked(Readable.from([Buffer.from('head-'), Buffer.from('tail')]), hash)) got.push(c as Buffer);
      })(),
    ).rejects.toThrow(/changed/);
    expect(Buffer.concat(got).toString()).toBe('head-');
  });
});
