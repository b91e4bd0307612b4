import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SecurityResult } from '../../model/scorecard.js';
import { sandcheck, tempOut } from '../helpers/cli.js';
import { fabricatedRun, secResult, taskResult } from '../unit/gate-fixtures.js';

/** Cards with every verdict, written as a run writes them, then `sandcheck report DIR --html` as a user runs it. */
const EVERY_TASK = [taskResult('case-fine', 'as-expected'), taskResult('case-wrong', 'unexpected'), taskResult('case-broken', 'error')];

async function writeRun(dir: string, security: SecurityResult[], enforces: string[], tasks = EVERY_TASK): Promise<void> {
  const run = fabricatedRun(dir, security, tasks, { enforces });
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'security.json'), JSON.stringify(run.security));
  await writeFile(join(dir, 'task.json'), JSON.stringify(run.task));
}

const items = (page: string): string[] =>
  [...page.matchAll(/<section class="item ([a-z-]+)" id="[st]\d+">\s*<h3><span class="badge ([a-z-]+)">[^<]*<\/span> ([^<]+) </g)].map(
    (m) => `${m[2]}:${m[3]}`,
  );

describe('report --html on cards with every verdict', () => {
  it('lists failures first (most severe first), then wrong task verdicts, inconclusive, harness errors, waived; held and not-applicable only in the card', async () => {
    const dir = join(await tempOut(), 'out');
    const waived: SecurityResult = {
      ...secResult('crossed-waived', 'crossed', { severity: 'critical' }),
      waiver: { reason: 'accepted', owner: 'ops', expires: '2099-12-31' },
    };
    await writeRun(
      dir,
      [
        secResult('held-one', 'held'),
        secResult('crossed-a-low', 'crossed', { severity: 'low' }),
        secResult('inconclusive-one', 'inconclusive', { policyItem: 'files.hostPaths' }),
        secResult('na-one', 'not-applicable'),
        waived,
        secResult('unenforced-one', 'unenforced', { severity: 'critical' }),
        secResult('crossed-z-critical', 'crossed', { severity: 'critical', policyItem: 'network.egress' }),
      ],
      ['network.egress', 'files.hostPaths'],
    );
    const r = await sandcheck(['report', dir, '--html']);
    expect(r.exitCode, r.all).toBe(0);
    const page = await readFile(join(dir, 'report.html'), 'utf8');
    expect(items(page)).toEqual([
      'crossed:crossed-z-critical',
      'crossed:crossed-a-low',
      'unenforced:unenforced-one',
      'unexpected:case-wrong',
      'inconclusive:inconclusive-one',
      'error:case-broken',
      'waived:crossed-waived',
    ]);
    const section = (id: string): string => {
      const at = page.indexOf(`</span> ${id} <`);
      expect(at, id).toBeGreaterThan(0);
      return page.slice(at, page.indexOf('</section>', at));
    };
    // A claimed item that crossed or was inconclusive is a false claim; an unclaimed crossing says so.
    expect(section('crossed-z-critical')).toContain('FALSE CLAIM');
    expect(section('inconclusive-one')).toContain('FALSE CLAIM');
    expect(section('crossed-a-low')).toContain('bwrap does not claim item.crossed-a-low');
    expect(section('unenforced-one')).toContain('The policy requires item.unenforced-one');
    expect(section('inconclusive-one')).toContain('Never read this as held');
    expect(section('crossed-waived')).toContain('Accepted by a waiver (ops, until 2099-12-31)');
    expect(section('case-broken')).toContain('A harness failure');
    expect(section('case-wrong')).toContain('A correct program was rejected');
    // The status reads as the exit code would: the waived crossing is not counted, the others are.
    expect(page).toContain('<p class="banner crossed">FAILED');
    // Held and not-applicable results are in the full card, not among what needs a look.
    expect(page.slice(page.indexOf('id="security"'))).toMatch(/<td class="v held">held<\/td><th>held-one<\/th>/);
    expect(page.slice(page.indexOf('id="security"'))).toMatch(/<td class="v not-applicable">not-applicable<\/td><th>na-one<\/th>/);
  });

  it('only held and inconclusive: the status is inconclusive (exit 2 as the run gives), never passed', async () => {
    const dir = join(await tempOut(), 'out');
    await writeRun(dir, [secResult('held-one', 'held'), secResult('inconclusive-one', 'inconclusive')], [], [taskResult('case-fine', 'as-expected')]);
    expect((await sandcheck(['report', dir, '--html'])).exitCode).toBe(0);
    const page = await readFile(join(dir, 'report.html'), 'utf8');
    expect(page).toContain('<p class="banner inconclusive">INCONCLUSIVE');
    expect(items(page)).toEqual(['inconclusive:inconclusive-one']);
  });

  it('a directory without valid cards is refused (exit 3) and nothing is written', async () => {
    const dir = await tempOut();
    await writeFile(join(dir, 'security.json'), '{"scorecard": "security"}');
    const r = await sandcheck(['report', dir, '--html']);
    expect(r.exitCode, r.all).toBe(3);
    expect(r.all).toMatch(/CONFIG_INVALID: .*security\.json is not a sandcheck security scorecard/);
    await expect(readFile(join(dir, 'report.html'))).rejects.toThrow();
  });
});
