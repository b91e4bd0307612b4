import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readHostFiles } from '../../lab/host-read.js';

const root = await mkdtemp(join(tmpdir(), 'sc-hostread-'));
const outside = await mkdtemp(join(tmpdir(), 'sc-hostread-outside-'));
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe('the harness reads workspace files on the host without following a link', () => {
  it('a file is hashed with its device and inode; a link, a linked directory and a missing file are named, never read through', async () => {
    await writeFile(join(outside, 'secret.txt'), 'host file outside the workspace\n');
    await writeFile(join(root, 'plain.txt'), 'hello\n');
    await symlink(join(outside, 'secret.txt'), join(root, 'link.txt'));
    await symlink(outside, join(root, 'inputs'));
    await mkdir(join(root, 'sub'));
    await writeFile(join(root, 'sub', 'deep.txt'), 'deep\n');
    const [plain, link, through, missing, deep] = await readHostFiles(root, ['plain.txt', 'link.txt', 'inputs/secret.txt', 'gone.txt', 'sub/deep.txt']);
    expect(plain).toMatchObject({ kind: 'file', size: 6, sha256: '5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03' });
    expect(plain?.ino).toBeGreaterThan(0);
    expect(link).toMatchObject({ kind: 'other', note: 'a symbolic link' });
    expect(link?.sha256).toBeUndefined();
    expect(through).toMatchObject({ kind: 'other', note: 'inputs is no longer a directory' });
    expect(missing).toMatchObject({ kind: 'missing' });
    expect(deep).toMatchObject({ kind: 'file', size: 5 });
  });
});
