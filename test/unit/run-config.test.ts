import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkRunFile, mergeRunOptions, resolveRunOptions, RunConfigError } from '../../cli/run-config.js';
import { EnvironmentSchema } from '../../model/environment.js';
import { RUN_DEFAULTS, RunFileSchema } from '../../model/run-options.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function project(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandcheck-run-config-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

async function refusal(p: Promise<unknown>): Promise<RunConfigError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof RunConfigError)) throw new Error(`expected a RunConfigError, got ${String(err)}`);
  return err;
}

describe('sandcheck.yaml schema', () => {
  it('takes the run flags by their long names, and nothing else', () => {
    const ok = RunFileSchema.parse({ backend: 'process', 'backend-config': 'b.yaml', only: ['identity-uid'], html: true, concurrency: 2, label: 'x' });
    expect(ok.only).toEqual(['identity-uid']);
    expect(RunFileSchema.safeParse({ 'live-network': true }).success).toBe(false);
    expect(RunFileSchema.safeParse({ only: 'identity-uid' }).success).toBe(false);
    expect(RunFileSchema.safeParse({ concurrency: 0 }).success).toBe(false);
    expect(checkRunFile(null, 'sandcheck.yaml')).toEqual({});
  });

  it('a wrong value is refused with its key path and line, without the value', () => {
    const text = 'backend: process\nonly:\n  - identity-uid\n  - 42424242\n';
    const err = (() => {
      try {
        checkRunFile({ backend: 'process', only: ['identity-uid', 42424242] }, 'sandcheck.yaml', text);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(RunConfigError);
    const e = err as RunConfigError;
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.place).toBe('line 4, column 5, only[1]');
    expect(e.message).not.toContain('42424242');
  });
});

describe('sandcheck.yaml merge: flags > file > defaults', () => {
  it('a flag wins over the file, the file over the defaults; the cards record the file relative to cwd and what was overridden', async () => {
    const cwd = await project({ 'sandcheck.yaml': 'policy: reference\nout: from-file\nonly: [identity-uid]\nbackend: process\n' });
    const o = await resolveRunOptions({ policy: 'ci', only: undefined }, cwd);
    expect(o).toMatchObject({ policy: 'ci', out: 'from-file', only: ['identity-uid'], backend: 'process', exporter: 'reference' });
    expect(o.runConfig).toMatchObject({ file: 'sandcheck.yaml', keys: ['backend', 'out', 'only'], overridden: ['policy'] });
    expect(o.runConfig?.sha256).toMatch(/^[0-9a-f]{64}$/);
    // The record fits the cards' environment schema.
    expect(EnvironmentSchema.shape.runConfig.parse(o.runConfig)).toEqual(o.runConfig);
    expect(mergeRunOptions({}, {})).toEqual(RUN_DEFAULTS);
    expect(mergeRunOptions({ out: 'flag' }, { out: 'file', label: 'f' })).toEqual({ ...RUN_DEFAULTS, out: 'flag', label: 'f' });
  });

  it('--no-config ignores the file; no file at all is the defaults; --config elsewhere takes paths relative to that file', async () => {
    const cwd = await project({
      'sandcheck.yaml': 'out: from-file\n',
      'ci/run.yaml': 'out: o\nbackend-config: b.yaml\npolicy: p.yaml\nbackend: ./adapter.mjs\n',
    });
    expect(await resolveRunOptions({ config: false }, cwd)).toEqual(RUN_DEFAULTS);
    expect(await resolveRunOptions({}, await project({}))).toEqual(RUN_DEFAULTS);
    const o = await resolveRunOptions({ config: 'ci/run.yaml' }, cwd);
    expect(o).toMatchObject({ out: 'ci/o', backendConfig: 'ci/b.yaml', policy: 'ci/p.yaml', backend: 'ci/adapter.mjs' });
    expect(o.runConfig?.file).toBe('ci/run.yaml');
    // A file outside the working directory is recorded by its hash only: no machine path in the cards.
    const elsewhere = await project({ 'x.yaml': 'label: far\n' });
    const far = await resolveRunOptions({ config: join(elsewhere, 'x.yaml') }, cwd);
    expect(far.label).toBe('far');
    expect(far.runConfig?.file).toBeUndefined();
    expect(far.runConfig?.sha256).toMatch(/^[0-9a-f]{64}$/);
    await expect(resolveRunOptions({ config: 'missing.yaml' }, cwd)).rejects.toThrow(/cannot read missing\.yaml/);
  });
});

describe('sandcheck.yaml refusals', () => {
  it('an unknown key is refused by its place (line and column), never echoing the file', async () => {
    const cwd = await project({ 'sandcheck.yaml': 'backend: process\n\nsekrit-ghp-abc123: value-xyz\n' });
    const err = await refusal(resolveRunOptions({}, cwd));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.file).toBe('sandcheck.yaml');
    expect(err.place).toBe('line 3, column 1');
    expect(err.message).toBe('sandcheck.yaml: line 3, column 1: a key sandcheck run does not know');
    expect(err.format()).not.toMatch(/sekrit|abc123|value-xyz/);
    expect(err.hint).toContain('backend-config');
    // JSON has no lines: the key's rank says where it is.
    const json = await project({ 'run.json': '{"backend": "process", "out": "o", "sekrit": 1}' });
    const j = await refusal(resolveRunOptions({ config: 'run.json' }, json));
    expect(j.place).toBe('the 3rd key at the top level');
    expect(j.message).not.toContain('sekrit');
  });

  it('a flag that must be said on the command line (live-network) is refused from the file, by name', async () => {
    const cwd = await project({ 'sandcheck.yaml': 'backend: process\nlive-network: true\n' });
    const err = await refusal(resolveRunOptions({}, cwd));
    expect(err.place).toBe('line 2, column 1');
    expect(err.message).toContain('live-network is accepted only as a flag');
  });

  it('a top level that is not a mapping is refused', async () => {
    const cwd = await project({ 'sandcheck.yaml': '- process\n' });
    expect((await refusal(resolveRunOptions({}, cwd))).place).toBe('the top level');
  });
});
