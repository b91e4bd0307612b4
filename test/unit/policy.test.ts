import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SandcheckError } from '../../harness/errors.js';
import { CI_POLICY, REFERENCE_POLICY } from '../../harness/model/policy.js';
import { loadPolicy } from '../../harness/policy-loader.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function policyFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandcheck-policy-test-'));
  dirs.push(dir);
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('policy', () => {
  it('has the essay numbers in the reference preset and a 5 s wall in ci', async () => {
    const ref = await loadPolicy('reference');
    expect(ref.resources).toEqual({ cpus: 2, memoryMb: 512, wallSeconds: 30, processes: 64, diskMb: 1024 });
    expect(ref.exports).toEqual({ maxFiles: 20, maxFileMb: 5, maxTotalMb: 40 });
    expect(ref.output.maxBytes).toBe(2 * 1024 * 1024);
    expect(ref.attempts).toEqual({ corrections: 3, queueStartupSeconds: 12 });
    expect(ref.network).toEqual({ mode: 'off', allow: [] });
    expect((await loadPolicy('ci')).resources.wallSeconds).toBe(5);
    expect(CI_POLICY.resources.memoryMb).toBe(REFERENCE_POLICY.resources.memoryMb);
  });

  it('lets a YAML file extend a preset and override one field', async () => {
    const path = await policyFile('tight.yaml', 'extends: ci\nresources:\n  memoryMb: 256\n');
    const p = await loadPolicy(path);
    expect(p.resources.memoryMb).toBe(256);
    expect(p.resources.wallSeconds).toBe(5);
    expect(p.name).toBe('ci+tight.yaml');
  });

  it('reports a bad value with its path and the value it got', async () => {
    const path = await policyFile('bad.json', JSON.stringify({ resources: { memoryMb: -1 } }));
    const err = await loadPolicy(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((err as SandcheckError).message).toContain('resources.memoryMb: expected a positive integer, got -1');
  });

  it('rejects unknown keys and unknown presets', async () => {
    const typo = await policyFile('typo.yaml', 'resources:\n  memoryMB: 256\n');
    await expect(loadPolicy(typo)).rejects.toThrow(/resources: Unrecognized key.*memoryMB/);
    const base = await policyFile('base.yaml', 'extends: lax\n');
    await expect(loadPolicy(base)).rejects.toThrow(/extends: expected one of reference, ci, got "lax"/);
    await expect(loadPolicy('no-such-policy')).rejects.toMatchObject({ code: 'POLICY_NOT_FOUND' });
  });
});
