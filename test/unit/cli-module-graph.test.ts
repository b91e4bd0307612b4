import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';

/**
 * What the quick commands load, asserted on the module graph rather than on a clock: every ES module the
 * loader hands out (a `load` hook) and every CommonJS module in the require cache at exit.
 */
const RECORDER = `
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const out = process.env.SANDCHECK_MODULE_LOG;
register('data:text/javascript,' + encodeURIComponent(\`
  import { appendFileSync } from 'node:fs';
  export async function load(url, context, next) { appendFileSync(\${JSON.stringify(out)}, url + '\\\\n'); return next(url, context); }
\`));
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(out, Object.keys(cache).map((f) => 'cjs:' + f + '\\n').join('')));
`;

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandcheck-modgraph-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The modules `sandcheck <args>` loads, run from source as `npm run dev` runs it. */
async function modulesLoadedBy(args: readonly string[]): Promise<{ exitCode: number | undefined; stdout: string; modules: string[] }> {
  const log = join(dir, `${args.join('_').replace(/[^\w]/g, '')}.log`);
  const recorder = join(dir, 'recorder.mjs');
  const { writeFile } = await import('node:fs/promises');
  await writeFile(recorder, RECORDER);
  const root = packageRoot();
  const res = await execa(process.execPath, ['--import', 'tsx', '--import', pathToFileURL(recorder).href, join(root, 'cli', 'main.ts'), ...args], {
    cwd: root,
    reject: false,
    env: { SANDCHECK_MODULE_LOG: log },
  });
  const modules = (await readFile(log, 'utf8')).split('\n').filter((l) => l !== '');
  return { exitCode: res.exitCode, stdout: res.stdout, modules };
}

const ours = (modules: readonly string[]): string[] => {
  const root = packageRoot();
  return modules
    .map((m) => (m.startsWith('cjs:') ? m.slice(4) : m.startsWith('file:') ? new URL(m).pathname : m))
    .filter((p) => p.startsWith(`${root}/`) && !p.includes('/node_modules/'))
    .map((p) => p.slice(root.length + 1));
};
const packages = (modules: readonly string[]): Set<string> =>
  new Set(
    modules.flatMap((m) => {
      const at = m.lastIndexOf('/node_modules/');
      if (at < 0) return [];
      const rest = m.slice(at + '/node_modules/'.length).split('/');
      return [rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '')];
    }),
  );

/** Packages and modules `list` does without: schemas (zod), backends, the runner, the lab, report writers, validators. */
const HEAVY_PACKAGES = ['zod', 'dockerode', 'ajv', 'ajv-formats', 'execa', 'junit-report-builder', 'pngjs', 'tar-stream', 'dns-packet', 'yaml'];
const HEAVY_MODULES = [
  /^backends\/(docker|bwrap|process|command|rpc)\//,
  /^harness\/(runner|run-suite|scorecard-builder)\./,
  /^lab\/netns\/(?!addresses\.)/,
  /^reports\/(junit|validate|sarif)/,
];

describe('CLI start-up: what the quick commands load', () => {
  it('--version loads the entry and package.json only: not the command line (commander), nothing of the suite', async () => {
    const r = await modulesLoadedBy(['--version']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(ours(r.modules).sort()).toEqual(['cli/main.ts', 'core/paths.ts']);
    expect([...packages(r.modules)].filter((p) => p !== 'tsx' && p !== 'esbuild' && p !== 'get-tsconfig' && p !== 'resolve-pkg-maps')).toEqual([]);
  }, 120_000);

  it('--version prints what the command line prints for it (-V and --version with another argument go through commander)', async () => {
    const fast = await modulesLoadedBy(['--version']);
    const full = await modulesLoadedBy(['-V', '--version']);
    expect(full.exitCode).toBe(0);
    expect(full.stdout).toBe(fast.stdout);
    expect(packages(full.modules).has('commander')).toBe(true);
  }, 120_000);

  it('list loads the probe catalogue without a backend, the runner, the lab or a validator', async () => {
    const r = await modulesLoadedBy(['list', '--json']);
    expect(r.exitCode).toBe(0);
    expect((JSON.parse(r.stdout) as unknown[]).length).toBeGreaterThan(50);
    expect(ours(r.modules).some((m) => m.startsWith('suites/'))).toBe(true);
    expect(HEAVY_PACKAGES.filter((p) => packages(r.modules).has(p))).toEqual([]);
    expect(ours(r.modules).filter((m) => HEAVY_MODULES.some((re) => re.test(m)))).toEqual([]);
  }, 120_000);

  it("--help builds every command without loading any command's implementation", async () => {
    const r = await modulesLoadedBy(['--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('doctor');
    expect(ours(r.modules).filter((m) => /^harness\/cli\/(?!main\.ts$)/.test(m) || /^(suites|probes|reports|lab)\//.test(m))).toEqual([]);
  }, 120_000);

  it('doctor loads the backends and the lab check, not the suite, the runner, a report writer or a validator', async () => {
    const r = await modulesLoadedBy(['doctor', '--json']);
    expect(r.stdout).toContain('sandcheck-doctor');
    expect(['ajv', 'ajv-formats', 'junit-report-builder', 'pngjs'].filter((p) => packages(r.modules).has(p))).toEqual([]);
    expect(
      ours(r.modules).filter(
        (m) => /^(suites|probes)\//.test(m) || /^harness\/(runner|run-suite|scorecard-builder)\./.test(m) || /^reports\/(junit|validate|sarif)/.test(m),
      ),
    ).toEqual([]);
  }, 120_000);
});
