import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, readCards, tempOut } from '../helpers/cli.js';

/** `sandcheck run` in a directory holding sandcheck.yaml, as a user runs it there. */
const runIn = (cwd: string, args: readonly string[]) => execa(process.execPath, [CLI, 'run', ...args], { cwd, reject: false, all: true, env: { CI: 'true' } });

describe('sandcheck run with a sandcheck.yaml', () => {
  it('takes backend and selection from the file, a flag (--out) over it, and records the file in both cards', async () => {
    const dir = await tempOut();
    await writeFile(join(dir, 'sandcheck.yaml'), '# the process control, one probe\nbackend: process\nonly:\n  - identity-uid\nout: from-file\n');
    const r = await runIn(dir, ['--out', 'flagged']);
    // The process control crosses identity-uid: exit 1, as the same flags would give.
    expect(r.exitCode, r.all).toBe(1);
    expect(await readdir(dir)).not.toContain('from-file');
    const { security, task } = await readCards(join(dir, 'flagged'));
    expect(security.backend.name).toBe('process');
    expect(security.results.map((x) => [x.id, x.verdict])).toEqual([['identity-uid', 'crossed']]);
    for (const card of [security, task])
      expect(card.environment?.runConfig).toMatchObject({ file: 'sandcheck.yaml', keys: ['backend', 'only'], overridden: ['out'] });
    expect(await readFile(join(dir, 'flagged', 'security.json'), 'utf8')).not.toContain(dir);
  }, 120_000);

  it('an unknown key is refused before anything runs (exit 3, its line named, nothing created); --no-config ignores the file', async () => {
    const dir = await tempOut();
    await writeFile(join(dir, 'sandcheck.yaml'), 'backend: process\nfail-fast: yes-please\n');
    const r = await runIn(dir, ['--out', 'o']);
    expect(r.exitCode, r.all).toBe(3);
    expect(r.stderr).toContain('CONFIG_INVALID: sandcheck.yaml: line 2, column 1: a key sandcheck run does not know');
    expect(r.stderr).not.toContain('yes-please');
    expect(await readdir(dir)).toEqual(['sandcheck.yaml']);
    // Ignored, the file cannot refuse: the run gets as far as its own check of the flags (an unknown probe id, exit 3).
    const ignored = await runIn(dir, ['--no-config', '--backend', 'process', '--only', 'no-such-probe', '--out', 'o']);
    expect(ignored.exitCode, ignored.all).toBe(3);
    expect(ignored.stderr).toContain('PROBE_UNKNOWN');
  }, 60_000);
});
