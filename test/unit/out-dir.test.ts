import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OUT_FILES, checkOutDir } from '../../core/out-dir.js';

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

describe('--out: every file a run writes into it is checked before the run', () => {
  it.each(OUT_FILES.map((name) => [name]))('%s planted as a symlink refuses the run (OUT_DIR_UNUSABLE), before anything is written', async (name) => {
    const dir = await mkdtemp(join(tmpdir(), 'sc-outdir-'));
    made.push(dir);
    await writeFile(join(dir, 'target'), 'not a report\n');
    await symlink(join(dir, 'target'), join(dir, name));
    await expect(checkOutDir(dir)).rejects.toMatchObject({ code: 'OUT_DIR_UNUSABLE', message: expect.stringContaining(`${name} is a symlink`) });
  });

  it('the HTML page of `run --html` is one of them', () => {
    expect(OUT_FILES).toContain('report.html');
  });

  it('a directory holding regular report files of the caller is accepted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sc-outdir-'));
    made.push(dir);
    for (const name of OUT_FILES) await writeFile(join(dir, name), '{}\n');
    await expect(checkOutDir(dir)).resolves.toMatchObject({ dir, missing: false });
  });
});
