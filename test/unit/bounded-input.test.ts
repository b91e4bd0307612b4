import { execFileSync, spawnSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readBoundedFile } from '../../core/bounded-file.js';
import { SandcheckError } from '../../core/errors.js';
import { POLICY_BOUNDS, PolicySchema, REFERENCE_POLICY } from '../../model/policy.js';
import { loadPolicy } from '../../harness/policy-loader.js';
import { harnessDeadlineMs } from '../../harness/runner.js';
import { endToEndBudgetMs } from '../../harness/task/correction-loop.js';
import { loadTaskDir } from '../../harness/task/load-tasks.js';

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandcheck-test-bounds-'));
  made.push(d);
  return d;
}
async function policyError(yaml: string, name = 'p.yaml'): Promise<SandcheckError> {
  const path = join(await tempDir(), name);
  writeFileSync(path, yaml);
  const err = await loadPolicy(path).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandcheckError);
  return err as SandcheckError;
}

const NODE_TIMER_MAX_MS = 2 ** 31 - 1;

describe('bounded input', () => {
  it('a policy name has a length limit; the message names the field and does not echo the whole value', async () => {
    const err = await policyError(`name: ${'x'.repeat(5000)}\n`);
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toMatch(/name: expected a name of 1\.\.128 characters, got a string of 5000 characters/);
    expect(err.message.length).toBeLessThan(600);
  });

  it('a policy file past the size limit is refused before it is parsed', async () => {
    const err = await policyError(`name: big\n# ${'y'.repeat(2 * 1024 * 1024)}\n`);
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toMatch(/the limit is 1048576/);
  });

  it('a wall limit the harness cannot time is refused with its bound (it overflowed Node timers to 1 ms)', async () => {
    const err = await policyError('resources:\n  wallSeconds: 3000000\n');
    expect(err.message).toMatch(/resources\.wallSeconds: at most 86400: .*2\^31-1 ms.*, got 3000000/);
  });

  it('every accepted policy arms timers below Node’s maximum', () => {
    const extreme = PolicySchema.parse({
      ...REFERENCE_POLICY,
      resources: { ...REFERENCE_POLICY.resources, wallSeconds: POLICY_BOUNDS.wallSeconds },
      attempts: { corrections: POLICY_BOUNDS.corrections, queueStartupSeconds: POLICY_BOUNDS.queueStartupSeconds },
    });
    expect(harnessDeadlineMs(extreme)).toBeLessThanOrEqual(NODE_TIMER_MAX_MS);
    expect(endToEndBudgetMs(extreme)).toBeLessThanOrEqual(NODE_TIMER_MAX_MS);
  });

  it('.inf and .nan are named for what they are, not "null"', async () => {
    const inf = await policyError('resources:\n  memoryMb: .inf\n');
    expect(inf.message).toMatch(/resources\.memoryMb: expected a positive integer, got infinite/);
    const nan = await policyError('resources:\n  cpus: .nan\n');
    expect(nan.message).toMatch(/resources\.cpus: expected a positive number, got not a number/);
    expect(`${inf.message}${nan.message}`).not.toMatch(/got null/);
  });

  it('/dev/zero and a FIFO are refused from their metadata, before a byte is read', async () => {
    const zero = await loadPolicy('/dev/zero').catch((e: unknown) => e);
    expect((zero as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((zero as SandcheckError).message).toMatch(/character device, not a regular file/);
    const fifo = join(await tempDir(), 'policy.yaml');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // Nobody ever writes to the FIFO: an attempt to read it would hang this test.
    const r = await readBoundedFile(fifo, 1024);
    expect(r).toMatchObject({ ok: false, reason: 'not-regular' });
    expect((await readBoundedFile('/dev/zero', 1024)).ok).toBe(false);
  });

  it('a task case with a 300-character id is refused at load (it crashed the run at export time)', async () => {
    const dir = await tempDir();
    writeFileSync(join(dir, 'long.yaml'), `id: ${'a'.repeat(300)}\ntitle: t\nexpected: accept\nprogram: print(1)\npredicate: {type: exit-code, code: 0}\n`);
    const err = await loadTaskDir(dir).catch((e: unknown) => e);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((err as SandcheckError).message).toMatch(/id: expected an id of at most 64 characters/);
  });

  it('a task case input file that is a device is refused, not read: named absolutely, through a link, or as a FIFO in the folder', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'cases'));
    const write = (file: string): void =>
      writeFileSync(
        join(dir, 'cases', 'dev.yaml'),
        `id: dev\ntitle: t\nexpected: accept\nprogram: print(1)\ninputs: [{path: in.bin, file: ${file}}]\npredicate: {type: exit-code, code: 0}\n`,
      );
    write('/dev/zero');
    const absolute = await loadTaskDir(join(dir, 'cases')).catch((e: unknown) => e);
    expect((absolute as SandcheckError).message).toMatch(/inputs\.0\.file: expected a relative path/);
    symlinkSync('/dev/zero', join(dir, 'cases', 'zero'));
    write('zero');
    const linked = await loadTaskDir(join(dir, 'cases')).catch((e: unknown) => e);
    expect((linked as SandcheckError).message).toMatch(/inputs: in\.bin: file zero: leads out of the case folder/);
    execFileSync('mkfifo', [join(dir, 'cases', 'fifo')]);
    write('fifo');
    const fifo = await loadTaskDir(join(dir, 'cases')).catch((e: unknown) => e);
    expect((fifo as SandcheckError).message).toMatch(/inputs: in\.bin: file fifo: is a FIFO, not a regular file/);
  });
});
