import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { packageRoot } from '../../core/paths.js';
import { loadTaskDir } from '../../harness/task/load-tasks.js';
import { extrasOf } from '../../probes/_shared/task/task-case.js';
import type { ProbeContext } from '../../model/probe.js';
import { obsWith } from '../helpers/task-fakes.js';

const dir = (name: string): string => join(packageRoot(), 'test', 'fixtures', 'tasks', name);

describe('user task directories', () => {
  it('loads YAML cases with inline programs, program files, inputs, stdin and correction attempts', async () => {
    const cases = await loadTaskDir(dir('good'));
    expect(cases.map((c) => c.id)).toEqual(['user-csv-report', 'user-sum']);
    const report = cases[0]!;
    expect(report.attempts).toHaveLength(2);
    expect(report.attempts?.[1]?.source).toContain('report.csv');
    expect(report.origin).toBe('csv-report.yaml');
    expect(cases[1]?.source).toContain('sys.stdin');
  });

  it('rejects a schema error naming the file and the field', async () => {
    const err = await loadTaskDir(dir('bad')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((err as SandcheckError).message).toContain('broken.yaml: predicate.expected');
    // The field and the kind of value, never the value's text: the file might not be what its name says.
    expect((err as SandcheckError).message).toContain('got a string of 6 characters');
    expect((err as SandcheckError).message).not.toContain('thirty');
  });

  it('a case whose predicate checks an exit code expects that ending; every other case expects exit 0', async () => {
    const cases = await loadTaskDir(dir('endings'));
    expect(cases.map((c) => [c.id, extrasOf(c).expectedExit])).toEqual([
      ['user-expects-failure', 2],
      ['user-quoted-csv', undefined],
    ]);
    expect(extrasOf((await loadTaskDir(dir('good')))[1]!).expectedExit).toBeUndefined();
  });

  it('a case may declare its outputs: fetched, strays and a BOM rejected; a path out of the workspace refused', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sc-user-outputs-'));
    try {
      const yaml = (outputs: string) =>
        `id: user-outputs\ntitle: declared outputs\nexpected: accept\nprogram: "open('r.csv','w').write('a\\\\n')"\npredicate: {type: csv-shape, artifact: r.csv, rows: 0}\n${outputs}`;
      await writeFile(join(root, 'case.yaml'), yaml('outputs: {files: [r.csv], text: {bom: reject, trailingSpace: reject}}\n'));
      const [c] = await loadTaskDir(root);
      expect(c?.artifacts).toEqual(['r.csv']);
      expect(extrasOf(c!).outputs).toEqual({ files: ['r.csv'], text: { bom: 'reject', trailingSpace: 'reject' } });
      const judge = (files: Record<string, string>, stray: string[] = []) =>
        c!.predicate(
          { ...obsWith(files), workspace: { entries: ['r.csv', ...stray].map((path) => ({ path, kind: 'file', size: 1 })), truncated: false } },
          {} as ProbeContext,
        );
      expect(judge({ 'r.csv': 'a\n' }).accepted).toBe(true);
      expect(judge({ 'r.csv': 'a\n' }, ['r.csv.orig']).reason).toMatch(/did not ask for \(r\.csv\.orig\)/);
      expect(judge({ 'r.csv': '\ufeffa\n' }).reason).toMatch(/byte order mark/);
      await writeFile(join(root, 'case.yaml'), yaml('outputs: {files: [../r.csv]}\n'));
      await expect(loadTaskDir(root)).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('outputs.files') });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a missing directory is a config error', async () => {
    await expect(loadTaskDir(dir('nope'))).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
