import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportWriteError, writeReportFile } from '../../core/atomic-write.js';
import { SandcheckError } from '../../core/errors.js';

/** A report is complete or absent, never written through a link, never over a file that is not the caller's. */
let dir: string;
let small: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandcheck-atomic-'));
  small = join(dir, 'small');
  await mkdir(small);
  // A 64 KiB file system: a disk that fills up while the reports are written.
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'sandcheck-test-small', small]);
});

afterAll(async () => {
  execFileSync('umount', ['-l', small]);
  await rm(dir, { recursive: true, force: true });
});

describe('writeReportFile', () => {
  it('on a full disk: a one-line REPORT_WRITE_FAILED naming report --recover, the earlier file intact, no temp file left', async () => {
    const path = join(small, 'security.json');
    await writeReportFile(path, '{"earlier":true}\n');
    const err = await writeReportFile(path, 'x'.repeat(1024 * 1024)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReportWriteError);
    expect((err as SandcheckError).code).toBe('REPORT_WRITE_FAILED');
    expect((err as SandcheckError).format()).toMatch(/no space left.*\n {2}hint: .*sandcheck report --recover /);
    expect(await readFile(path, 'utf8')).toBe('{"earlier":true}\n');
    expect(await readdir(small)).toEqual(['security.json']);
  });

  it('replaces a file of the caller whole; refuses a symlink at the target or as the directory', async () => {
    const path = join(dir, 'task.json');
    await writeReportFile(path, 'one\n');
    await writeReportFile(path, 'two\n');
    expect(await readFile(path, 'utf8')).toBe('two\n');
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'keep\n');
    await symlink(victim, join(dir, 'security.sarif'));
    await expect(writeReportFile(join(dir, 'security.sarif'), 'x')).rejects.toMatchObject({ code: 'OUT_DIR_UNUSABLE' });
    const real = join(dir, 'real');
    await mkdir(real);
    await symlink(real, join(dir, 'linked'));
    await expect(writeReportFile(join(dir, 'linked', 'task.json'), 'x')).rejects.toMatchObject({ code: 'OUT_DIR_UNUSABLE' });
    expect(await readFile(victim, 'utf8')).toBe('keep\n');
    expect(await readdir(real)).toEqual([]);
  });
});
