import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { packageRoot } from '../../core/paths.js';
import { loadTaskDir } from '../../harness/task/load-tasks.js';
import { extrasOf } from '../../probes/_shared/task/task-case.js';

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

  it('a missing directory is a config error', async () => {
    await expect(loadTaskDir(dir('nope'))).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
