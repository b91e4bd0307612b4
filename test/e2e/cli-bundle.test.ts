import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { CLI } from '../helpers/cli.js';

/** The built bin (npm run build: tsc, then scripts/bundle-cli.ts) runs from its bundle: what it loads, per command. */
const RECORDER = `
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
const out = process.env.SANDCHECK_MODULE_LOG;
register('data:text/javascript,' + encodeURIComponent(\`
  import { appendFileSync } from 'node:fs';
  export async function load(url, context, next) { appendFileSync(\${JSON.stringify(out)}, url + '\\\\n'); return next(url, context); }
\`));
`;

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandcheck-bundle-'));
  await writeFile(join(dir, 'recorder.mjs'), RECORDER);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function filesLoadedBy(args: readonly string[]): Promise<{ exitCode: number | undefined; stdout: string; files: string[] }> {
  const log = join(dir, `${args.join('_').replace(/[^\w]/g, '')}.log`);
  const res = await execa(process.execPath, ['--import', pathToFileURL(join(dir, 'recorder.mjs')).href, CLI, ...args], {
    reject: false,
    env: { SANDCHECK_MODULE_LOG: log, CI: 'true' },
  });
  const root = packageRoot();
  const files = (await readFile(log, 'utf8'))
    .split('\n')
    .filter((l) => l.startsWith('file:'))
    .map((u) => new URL(u).pathname)
    .filter((p) => p.startsWith(`${root}/`))
    .map((p) => p.slice(root.length + 1));
  return { exitCode: res.exitCode, stdout: res.stdout, files };
}

describe('the built CLI is a bundle', () => {
  it('--version loads only the entry and its own chunks, no package', async () => {
    const r = await filesLoadedBy(['--version']);
    expect(r.exitCode).toBe(0);
    const pkg = JSON.parse(await readFile(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
    expect(r.stdout).toBe(pkg.version);
    expect(r.files[0]).toBe('dist/cli/main.js');
    expect(r.files.filter((f) => !f.startsWith('dist/cli/chunks/') && f !== 'dist/cli/main.js')).toEqual([]);
    expect(r.files.length).toBeLessThanOrEqual(4);
  }, 60_000);

  it("list runs from the bundle's chunks: no module of tsc's dist/ output and no other command's chunk", async () => {
    const r = await filesLoadedBy(['list', '--json']);
    expect(r.exitCode).toBe(0);
    expect((JSON.parse(r.stdout) as unknown[]).length).toBeGreaterThan(50);
    expect(r.files.some((f) => /^dist\/cli\/chunks\/list-command-/.test(f))).toBe(true);
    expect(r.files.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/cli/chunks/') && f !== 'dist/cli/main.js')).toEqual([]);
    expect(r.files.filter((f) => /^dist\/cli\/chunks\/(run|doctor|matrix|report)-/.test(f))).toEqual([]);
  }, 60_000);
});
