import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../model/policy.js';
import type { GateReport, GateRun } from '../../reports/gate.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';
import { fabricatedRun, secResult, taskResult, withPolicy } from '../unit/gate-fixtures.js';

const skip = await bwrapSkipReason();
const PROBES = ['fork-bomb', 'identity-uid', 'secret-decoy-file'];
const run = (out: string, extra: string[] = [], env: Record<string, string> = {}) =>
  sandcheck(['run', '--backend', 'bwrap', '--policy', 'ci', '--only', ...PROBES, '--out', out, ...extra], { env });

const waiverYaml = (expires: string, extra = '') =>
  `waivers:\n  - probe: fork-bomb\n    backend: bwrap\n    reason: "pids limit off | while cgroups move"\n    owner: platform-team\n    expires: ${expires}\n${extra}`;
const UNUSED = '  - probe: memory-bomb\n    reason: never ran here\n    owner: bob\n    expires: 2099-12-31\n';

describe.skipIf(skip !== undefined)(`the policy-change gate on real bwrap runs${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let dir: string;
  let base: string;
  let head: string;
  let live: string;
  let expired: string;

  beforeAll(async () => {
    dir = await tempOut();
    base = join(dir, 'base');
    head = join(dir, 'head');
    await writeFile(join(dir, 'no-pids.yaml'), 'limits:\n  pids: false\n');
    // The base names its (default) configuration too, so both cards record the options they applied.
    await writeFile(join(dir, 'defaults.yaml'), 'limits:\n  pids: true\n');
    live = join(dir, 'live.yaml');
    expired = join(dir, 'expired.yaml');
    await writeFile(live, waiverYaml('2099-12-31', UNUSED));
    await writeFile(expired, waiverYaml('2020-01-01'));
    const b = await run(base, ['--backend-config', join(dir, 'defaults.yaml')]);
    expect(b.exitCode, b.all?.slice(-3000)).toBe(0);
    // The head weakens exactly one policy item: no pids limit (declared not enforced, and run anyway: the bomb is seen).
    const h = await run(head, ['--backend-config', join(dir, 'no-pids.yaml')]);
    expect(h.exitCode, h.all?.slice(-3000)).toBe(1);
  }, 120_000);

  it('reports exactly fork-bomb (and the dropped resources.processes claim) and exits 1', async () => {
    const res = await sandcheck(['compare', '--base', base, '--head', head, '--json']);
    expect(res.exitCode, res.all).toBe(1);
    const report = JSON.parse(res.stdout) as GateReport;
    const changed = report.changes.filter((c) => c.class !== 'unchanged').map((c) => `${c.kind}:${c.id}:${c.base}>${c.head}:${c.class}`);
    expect(changed.sort()).toEqual([
      'claim:resources.processes:claimed>not claimed:regression',
      expect.stringMatching(/^config:backend-config:defaults\.yaml \(options [0-9a-f]{12}\)>no-pids\.yaml \(options [0-9a-f]{12}\):changed$/),
      'security:fork-bomb:held>crossed:regression',
    ]);
    expect(report.summary).toMatchObject({ regressions: 2, waived: 0, claimsDropped: 1, policyLoosened: 0 });
    // The backend configuration difference is listed, with the option that differs, before → after.
    expect(report.backendConfig).toMatchObject({
      changed: true,
      optionsCompared: true,
      base: { file: 'defaults.yaml' },
      head: { file: 'no-pids.yaml' },
      options: [{ path: 'limits.pids', base: 'true', head: 'false' }],
    });
    expect(report.changes.find((c) => c.kind === 'claim' && c.id === 'resources.processes')?.reason).toMatch(
      /no longer claims to enforce resources\.processes; backend config defaults\.yaml/,
    );
    expect(report.head.security).toMatchObject({ total: 3, held: 2, crossed: 1, unenforced: 0, notApplicable: 0 });
    const text = await sandcheck(['compare', '--base', base, '--head', head]);
    expect(text.stdout).toMatch(/REGRESSION\s+security fork-bomb: held → crossed/);
    expect(text.stdout).toMatch(/head bwrap \(ci\): 3 security: 2 held, 1 crossed, 0 unenforced, 0 inconclusive, 0 not applicable/);
    expect(text.stdout).toMatch(/changed\s+config\s+backend-config: defaults\.yaml .* → no-pids\.yaml .*\n.*\n\s+limits\.pids: true → false/);
  });

  it('--exclude of the regressed probe leaves the dropped claim failing; a waiver on the item then passes it', async () => {
    const res = await sandcheck(['compare', '--base', base, '--head', head, '--exclude', 'fork-bomb', '--json']);
    expect(res.exitCode, res.all).toBe(1);
    const report = JSON.parse(res.stdout) as GateReport;
    expect(report.excluded).toEqual([{ pattern: 'fork-bomb', matched: ['fork-bomb'] }]);
    expect(report.changes.filter((c) => c.class === 'regression').map((c) => `${c.kind}:${c.id}`)).toEqual(['claim:resources.processes']);
    const item = join(dir, 'item.yaml');
    await writeFile(item, 'waivers:\n  - probe: resources.processes\n    reason: pids controller moves\n    owner: platform-team\n    expires: 2099-12-31\n');
    const waived = await sandcheck(['compare', '--base', base, '--head', head, '--exclude', 'fork-bomb', '--waivers', item]);
    expect(waived.exitCode, waived.all).toBe(0);
  });

  it('with a live waiver it exits 0, and the waiver that matched nothing is reported', async () => {
    const summary = join(dir, 'gate-summary.md');
    const md = join(dir, 'gate.md');
    const res = await sandcheck(['compare', '--base', base, '--head', head, '--waivers', live, '--markdown', md], { env: { GITHUB_STEP_SUMMARY: summary } });
    expect(res.exitCode, res.all).toBe(0);
    expect(res.stdout).toMatch(/waived \(platform-team, until 2099-12-31\)\s+security fork-bomb/);
    expect(res.stdout).toContain('unused waiver for memory-bomb (owner bob)');
    const step = await readFile(summary, 'utf8');
    expect(step).toContain('## sandcheck gate: passed');
    expect(step).toContain('| waived (platform-team, until 2099-12-31) | security | fork-bomb | held | crossed |');
    expect(await readFile(md, 'utf8')).toBe(step.replace(/\n$/, ''));
  });

  it('with the waiver expired it exits 1 and names the waiver', async () => {
    const res = await sandcheck(['compare', '--base', base, '--head', head, '--waivers', expired]);
    expect(res.exitCode, res.all).toBe(1);
    expect(res.stdout).toContain('waiver for fork-bomb on bwrap expired on 2020-01-01');
  });

  it('run --waivers: the accepted finding is marked waived in both cards and the exit code; expired fails naming it', async () => {
    const out = join(dir, 'head-waived');
    const summary = join(dir, 'run-summary.md');
    const res = await run(out, ['--backend-config', join(dir, 'no-pids.yaml'), '--waivers', live], { GITHUB_STEP_SUMMARY: summary });
    expect(res.exitCode, res.all?.slice(-3000)).toBe(0);
    const { security } = await readCards(out);
    expect(security.results.find((r) => r.id === 'fork-bomb')).toMatchObject({
      verdict: 'crossed',
      waiver: { owner: 'platform-team', expires: '2099-12-31' },
    });
    expect(security.summary.waived).toBe(1);
    const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(await readFile(join(out, 'security.junit.xml'), 'utf8')) as {
      testsuites: { testsuite: { '@name': string; testcase: { '@name': string; skipped?: { '@message': string } } }[] };
    };
    const resources = xml.testsuites.testsuite.find((s) => s['@name'] === 'bwrap.resources');
    expect(resources?.testcase.skipped?.['@message']).toBe('waived: pids limit off | while cgroups move (platform-team, expires 2099-12-31)');
    const step = await readFile(summary, 'utf8');
    expect(step).toContain('3 security: 2 held, 1 crossed, 0 unenforced, 0 inconclusive, 0 not applicable, 1 waived');
    expect(step).toContain('| waived (crossed) | resources | fork-bomb |');

    const failing = await run(join(dir, 'head-expired'), ['--backend-config', join(dir, 'no-pids.yaml'), '--waivers', expired, '--only', 'fork-bomb']);
    expect(failing.exitCode, failing.all?.slice(-3000)).toBe(1);
    expect(failing.stdout).toContain('waiver for fork-bomb on bwrap expired on 2020-01-01');
  }, 60_000);

  it('usage errors exit 3 with a hint; the side-by-side compare still works', async () => {
    const missing = await sandcheck(['compare', '--base', join(dir, 'nope'), '--head', head]);
    expect(missing.exitCode).toBe(3);
    expect(missing.stderr).toMatch(/USAGE: --base .*nope is not a directory\n {2}hint: pass the --out directory of a finished `sandcheck run`/);
    const notRun = await sandcheck(['compare', '--base', dir, '--head', head]);
    expect(notRun.exitCode).toBe(3);
    expect(notRun.stderr).toContain('has no security.json');
    expect((await sandcheck(['compare', '--base', base])).exitCode).toBe(3);
    expect((await sandcheck(['compare', base, '--head', head])).exitCode).toBe(3);
    const side = await sandcheck(['compare', base, head]);
    expect(side.exitCode, side.all).toBe(0);
    expect(side.stdout).toMatch(/\* fork-bomb\s+held\s+crossed/);
  });
});

/** Writes a fabricated run's two cards as `sandcheck run --out` would. */
async function writeRun(dir: string, r: GateRun): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'security.json'), JSON.stringify(r.security, null, 2));
  await writeFile(join(dir, 'task.json'), JSON.stringify(r.task, null, 2));
  return dir;
}

describe('the gate through the CLI on written cards: policy loosening, --fail-on, --exclude', () => {
  const tasks = [taskResult('average-correct', 'as-expected')];
  const probes = (flood: 'held' | 'crossed', secret: 'held' | 'crossed') => [
    secResult('stderr-flood', flood, { severity: 'low', category: 'resources', policyItem: 'output.maxBytes' }),
    secResult('secret-decoy-file', secret, { severity: 'high', category: 'files', policyItem: 'files.hostPaths' }),
  ];
  const at = (wallSeconds: number): Policy => withPolicy({ resources: { wallSeconds } });
  let dir: string;
  let base: string;
  beforeAll(async () => {
    dir = await tempOut();
    base = await writeRun(join(dir, 'base'), fabricatedRun('base', probes('held', 'held'), tasks, { policy: at(5) }));
  });
  const gate = async (name: string, r: GateRun, extra: string[] = []) =>
    sandcheck(['compare', '--base', base, '--head', await writeRun(join(dir, name), r), ...extra]);

  it('a policy loosened on one item with every verdict unchanged exits 1 naming it; tightened exits 0', async () => {
    const loose = await gate('loose', fabricatedRun('loose', probes('held', 'held'), tasks, { policy: at(10) }));
    expect(loose.exitCode, loose.all).toBe(1);
    expect(loose.stdout).toMatch(/REGRESSION\s+policy\s+resources\.wallSeconds: 5 → 10\n\s+looser: raised: a program may run longer/);
    expect(loose.stdout).toContain('gate: 1 regressions (1 policy loosened, 0 claims dropped)');
    const tight = await gate('tight', fabricatedRun('tight', probes('held', 'held'), tasks, { policy: at(2) }), ['--json']);
    expect(tight.exitCode, tight.all).toBe(0);
    const report = JSON.parse(tight.stdout) as GateReport;
    expect(report.changes.filter((c) => c.kind === 'policy').map((c) => `${c.id}:${c.base}>${c.head}:${c.class}`)).toEqual([
      'resources.wallSeconds:5>2:improvement',
    ]);
  });

  it('--fail-on high ignores a low-severity crossing and fails on a high one; --exclude of the regressed probe exits 0', async () => {
    const low = fabricatedRun('low', probes('crossed', 'held'), tasks, { policy: at(5) });
    expect((await gate('low', low)).exitCode).toBe(1);
    const ignored = await gate('low', low, ['--fail-on', 'high']);
    expect(ignored.exitCode, ignored.all).toBe(0);
    expect(ignored.stdout).toMatch(/regression \(below --fail-on\) security stderr-flood: held → crossed \(low\)/);
    const high = await gate('high', fabricatedRun('high', probes('held', 'crossed'), tasks, { policy: at(5) }), ['--fail-on', 'high']);
    expect(high.exitCode, high.all).toBe(1);
    expect(high.stdout).toMatch(/REGRESSION\s+security secret-decoy-file: held → crossed \(high\)/);
    const excluded = await gate('high', fabricatedRun('high', probes('held', 'crossed'), tasks, { policy: at(5) }), ['--exclude', 'secret-decoy-file']);
    expect(excluded.exitCode, excluded.all).toBe(0);
    expect(excluded.stdout).toContain('excluded from the gate: secret-decoy-file (1)');
    const byCategory = await gate('high', fabricatedRun('high', probes('crossed', 'crossed'), tasks, { policy: at(5) }), ['--exclude', 'files,resources']);
    expect(byCategory.exitCode, byCategory.all).toBe(0);
  });

  it('usage: a severity that is not one exits 3; --fail-on and --exclude belong to the gate', async () => {
    const bad = await sandcheck(['compare', '--base', base, '--head', base, '--fail-on', 'severe']);
    expect(bad.exitCode).toBe(3);
    expect(bad.stderr).toMatch(/--fail-on.*severe.*critical, high, medium, low/s);
    expect((await sandcheck(['compare', '--base', base, '--head', base, '--exclude', ''])).exitCode).toBe(3);
    const sideBySide = await sandcheck(['compare', base, base, '--fail-on', 'high']);
    expect(sideBySide.exitCode).toBe(3);
    expect(sideBySide.stderr).toContain('--fail-on and --exclude belong to the gate');
  });
});
