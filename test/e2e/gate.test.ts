import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GateReport } from '../../reports/gate.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

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
    live = join(dir, 'live.yaml');
    expired = join(dir, 'expired.yaml');
    await writeFile(live, waiverYaml('2099-12-31', UNUSED));
    await writeFile(expired, waiverYaml('2020-01-01'));
    const b = await run(base);
    expect(b.exitCode, b.all?.slice(-3000)).toBe(0);
    // The head weakens exactly one policy item: no pids limit (declared not enforced).
    const h = await run(head, ['--backend-config', join(dir, 'no-pids.yaml')]);
    expect(h.exitCode, h.all?.slice(-3000)).toBe(1);
  }, 120_000);

  it('reports exactly fork-bomb (and the dropped resources.processes claim) and exits 1', async () => {
    const res = await sandcheck(['compare', '--base', base, '--head', head, '--json']);
    expect(res.exitCode, res.all).toBe(1);
    const report = JSON.parse(res.stdout) as GateReport;
    const changed = report.changes.filter((c) => c.class !== 'unchanged').map((c) => `${c.kind}:${c.id}:${c.base}>${c.head}:${c.class}`);
    expect(changed.sort()).toEqual(['claim:resources.processes:claimed>not claimed:regression', 'security:fork-bomb:held>unenforced:regression']);
    expect(report.summary).toMatchObject({ regressions: 2, waived: 0 });
    expect(report.head.security).toMatchObject({ total: 3, held: 2, unenforced: 1, notApplicable: 0 });
    const text = await sandcheck(['compare', '--base', base, '--head', head]);
    expect(text.stdout).toMatch(/REGRESSION\s+security fork-bomb: held → unenforced/);
    expect(text.stdout).toMatch(/head bwrap \(ci\): 3 security: 2 held, 0 crossed, 1 unenforced, 0 inconclusive, 0 not applicable/);
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
    expect(step).toContain('| waived (platform-team, until 2099-12-31) | security | fork-bomb | held | unenforced |');
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
      verdict: 'unenforced',
      waiver: { owner: 'platform-team', expires: '2099-12-31' },
    });
    expect(security.summary.waived).toBe(1);
    const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(await readFile(join(out, 'security.junit.xml'), 'utf8')) as {
      testsuites: { testsuite: { '@name': string; testcase: { '@name': string; skipped?: { '@message': string } } }[] };
    };
    const resources = xml.testsuites.testsuite.find((s) => s['@name'] === 'bwrap.resources');
    expect(resources?.testcase.skipped?.['@message']).toBe('waived: pids limit off | while cgroups move (platform-team, expires 2099-12-31)');
    const step = await readFile(summary, 'utf8');
    expect(step).toContain('3 security: 2 held, 0 crossed, 1 unenforced, 0 inconclusive, 0 not applicable, 1 waived');
    expect(step).toContain('| waived (unenforced) | resources | fork-bomb |');

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
    expect(side.stdout).toMatch(/\* fork-bomb\s+held\s+unenforced/);
  });
});
