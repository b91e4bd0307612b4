import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdapterCheckReport } from '../../adapter/check/model.js';
import { packageRoot } from '../../core/paths.js';
import type { SecurityScorecard, TaskScorecard } from '../../model/scorecard.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';

/**
 * The published package as a user gets it: `npm pack`, installed globally into a temp prefix, and
 * run from another directory against the example module adapters (which import only 'sandcheck/adapter').
 */
const root = packageRoot();
const skipReason = process.getuid?.() !== 0 ? 'the example adapter needs root (it mounts inside its namespaces)' : undefined;
const BROKEN = ['create.fresh-workspace', 'exec.abort', 'destroy.leaves-nothing'];

let work: string;
let project: string;
let bin: string;

const sandcheck = (args: readonly string[]) => execa(bin, args, { cwd: project, reject: false, all: true, env: { CI: 'true' } });

describe.skipIf(skipReason !== undefined)('the packed package with module adapters', () => {
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sandcheck-pack-'));
    // dist/ is built by `npm test` (tsc -p tsconfig.build.json) before the tests run.
    const packed = await execa('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: root });
    const tarball = join(work, packed.stdout.trim().split('\n').pop() ?? '');
    const prefix = join(work, 'prefix');
    await execa('npm', ['install', '-g', '--prefix', prefix, tarball, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: work });
    bin = join(prefix, 'bin', 'sandcheck');
    project = join(work, 'project');
    await mkdir(join(project, 'node_modules'), { recursive: true });
    // The adapter's own `import 'sandcheck/adapter'` resolves to the installed package (as after `npm link sandcheck`).
    await symlink(join(prefix, 'lib', 'node_modules', 'sandcheck'), join(project, 'node_modules', 'sandcheck'));
    await copyFile(join(root, 'examples', 'adapter-module', 'adapter.mjs'), join(project, 'adapter.mjs'));
    await copyFile(join(root, 'examples', 'broken-adapter', 'adapter.mjs'), join(project, 'broken.mjs'));
  }, 300_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('adapter check: the example adapter passes every check; JSON and adapter.junit.xml are written', async () => {
    const res = await sandcheck(['adapter', 'check', '--backend', './adapter.mjs', '--out', 'check']);
    expect(res.exitCode, res.all).toBe(0);
    const report = JSON.parse(await readFile(join(project, 'check', 'adapter-check.json'), 'utf8')) as AdapterCheckReport;
    expect(report.summary.blockingFailed).toEqual([]);
    expect(report.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}: ${c.detail}`)).toEqual([]);
    const xml = new XMLParser({ ignoreAttributes: false }).parse(await readFile(join(project, 'check', 'adapter.junit.xml'), 'utf8')) as {
      testsuites: { '@_tests': string; '@_failures': string };
    };
    expect(Number(xml.testsuites['@_tests'])).toBe(report.checks.length);
    expect(Number(xml.testsuites['@_failures'])).toBe(0);
  }, 120_000);

  it('run --backend ./adapter.mjs --policy ci: the whole suite; claimed items hold, the others are run anyway and what crossed is said (exit 1)', async () => {
    const res = await sandcheck(['run', '--backend', './adapter.mjs', '--policy', 'ci', '--out', 'out']);
    expect(res.exitCode, res.all).toBe(1);
    expect(res.all).toMatch(/blocking check\(s\) passed/);
    const security = JSON.parse(await readFile(join(project, 'out', 'security.json'), 'utf8')) as SecurityScorecard;
    const task = JSON.parse(await readFile(join(project, 'out', 'task.json'), 'utf8')) as TaskScorecard;
    expect(security.backend.name).toBe('example-unshare');
    const byId = new Map(security.results.map((r) => [r.id, r.verdict]));
    for (const id of ['read-only-input', 'identity-uid', 'wall-clock-sleep', 'stdout-flood', 'residue', 'survive-teardown', 'metadata-ipv4'])
      expect(byId.get(id), id).toBe('held');
    const disclaimed = new Set([
      'resources.memoryMb',
      'resources.processes',
      'resources.cpus',
      'resources.diskMb',
      'files.hostPaths',
      'identity.hostCredentials',
      'posture.namespaces',
      'posture.hostMounts',
      'posture.seccomp',
      'posture.capabilityBounding',
      'posture.devices',
    ]);
    // Nothing is left unrun on the claim's word; every crossing is of an item the adapter does not claim, and says so.
    expect(security.results.filter((r) => r.verdict === 'unenforced').map((r) => r.id)).toEqual([]);
    const crossed = security.results.filter((r) => r.verdict === 'crossed');
    expect(crossed.filter((r) => !disclaimed.has(r.policyItem) || r.claimed !== false).map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    // The unshare example sets no memory limit: the bomb runs to its own ceiling and is seen doing so.
    expect(crossed.map((r) => r.id)).toContain('memory-bomb');
    // Its workspace is not on the host: the case judged by the workspace listing is not-applicable, and says why.
    const notListed = (r: TaskScorecard['results'][number]) => r.outcome === 'not-applicable' && /the host cannot list this backend's workspace/.test(r.reason);
    expect(task.results.filter((r) => r.outcome !== 'as-expected' && !notListed(r)).map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(task.results.filter(notListed).map((r) => r.id)).toEqual(['average-stray-copies']);
  }, 600_000);

  it('the broken example fails exactly its three blocking checks, and run refuses it (exit 3)', async () => {
    const check = await sandcheck(['adapter', 'check', '--backend', './broken.mjs', '--json']);
    expect(check.exitCode, check.all).toBe(1);
    const report = JSON.parse(check.stdout) as AdapterCheckReport;
    expect([...report.summary.blockingFailed].sort()).toEqual([...BROKEN].sort());
    const run = await sandcheck(['run', '--backend', './broken.mjs', '--policy', 'ci', '--out', 'refused']);
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stderr).toContain('ADAPTER_CHECK_FAILED');
    for (const id of BROKEN) expect(run.stderr).toContain(id);
    // The check killed what the broken destroy() left (found by the check's run id: another file's check may be running).
    const checkRun = /\(check run ([a-z0-9]+)\)/.exec(run.stderr)?.[1];
    expect(checkRun, run.stderr).toBeDefined();
    expect(await findProcessesWithCmdline(`sandcheck-check-${checkRun ?? 'x'}-`)).toEqual([]);
  }, 180_000);
});

describe.skipIf(skipReason !== undefined)('examples/vitest-embed', () => {
  const embed = (only: string) =>
    execa('npx', ['vitest', 'run', '--config', join(root, 'examples', 'vitest-embed', 'vitest.config.mjs')], {
      cwd: root,
      reject: false,
      all: true,
      env: { SANDCHECK_ONLY: only },
    });

  it('a user vitest run embeds the suite: passes where the adapter holds, fails where it does not', async () => {
    const ok = await embed('read-only-input,identity-uid,residue,exit-code-propagation');
    expect(ok.exitCode, ok.all).toBe(0);
    expect(ok.all).toMatch(/4 passed/);
    // The example claims no memory limit: the bomb runs anyway and its crossing fails the user's test.
    const crossed = await embed('memory-bomb');
    expect(crossed.exitCode, crossed.all).toBe(1);
    expect(crossed.all).toMatch(/memory-bomb.*\n[\s\S]*expected 'crossed' to match/);
  }, 300_000);
});
