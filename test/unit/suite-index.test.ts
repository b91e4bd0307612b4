import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { INDEX_FILE, collectSpecs, indexText } from '../../scripts/generate-suite-index.js';
import { optInProbes, securitySuite, taskSuite } from '../../suites/index.js';

const made: string[] = [];
afterAll(async () => {
  for (const d of made) await rm(d, { recursive: true, force: true });
});

async function scratch(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'sandcheck-index-'));
  made.push(root);
  for (const r of ['probes', 'tasks']) await mkdir(join(root, r));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

describe('one folder, one probe: the generated suite index', () => {
  it('is up to date (npm run suite-index), and every probe and task case of the suites comes from it', async () => {
    const found = await collectSpecs();
    expect(await readFile(join(packageRoot(), INDEX_FILE), 'utf8')).toBe(indexText(found));
    const dirs = found.map((f) => `${f.root}/${f.dir}`);
    for (const p of [...securitySuite, ...optInProbes]) expect(dirs).toContain(`probes/${p.id}`);
    for (const t of taskSuite) expect(dirs).toContain(`tasks/${t.id}`);
    expect(found.length).toBe(securitySuite.length + optInProbes.length + taskSuite.length);
  });

  it('fails when a folder and its spec name different ids, a folder holds two specs or none, or a task sits among the probes', async () => {
    const spec = (kind: string, id: string, name = 'spec'): string => `export const ${name} = { kind: '${kind}', id: '${id}' };\n`;
    await expect(collectSpecs(await scratch({ 'probes/a/probe.ts': spec('security', 'a'), 'tasks/t/probe.ts': spec('task', 't') }))).resolves.toHaveLength(2);
    await expect(collectSpecs(await scratch({ 'probes/a/probe.ts': spec('security', 'b') }))).rejects.toThrow(
      /probes\/a\/probe\.ts: its spec's id is "b", its folder "a"/,
    );
    await expect(collectSpecs(await scratch({ 'probes/a/probe.ts': spec('security', 'a') + spec('security', 'a2', 'other') }))).rejects.toThrow(
      /exports 2 specs \(spec, other\)/,
    );
    await expect(collectSpecs(await scratch({ 'probes/a/probe.ts': 'export const helper = 1;\n' }))).rejects.toThrow(/exports 0 specs/);
    await expect(collectSpecs(await scratch({ 'probes/t/probe.ts': spec('task', 't') }))).rejects.toThrow(/a task spec belongs in tasks\//);
    await expect(collectSpecs(await scratch({ 'probes/a/payload.py': 'pass\n' }))).rejects.toThrow(/probes\/a: no probe\.ts/);
  });
});
