import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { POLICY_ITEMS, type Capabilities } from '../../model/backend-contract.js';
import { CommandBackendConfigSchema } from '../../backends/command/config.js';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import { taskScorecard } from '../../harness/scorecard-builder.js';
import { taskJunit } from '../../reports/junit-report.js';
import { validateScorecard } from '../../reports/validate.js';
import { averageCorrect } from '../../tasks/average-correct/probe.js';
import { averageStdoutOnly } from '../../tasks/average-stdout-only/probe.js';
import { stdinFilter } from '../../tasks/stdin-filter/probe.js';
import { FAST_POLICY, runFake } from '../helpers/fake-run.js';

const WHY = "the tool's default mode keeps every filesystem read-only";
const readOnlyBox: Capabilities = { isolation: 'sandbox', enforces: POLICY_ITEMS, noWrittenResults: WHY };
const meta = { runId: 'rtest0', startedAt: new Date(), finishedAt: new Date(), interrupted: false };

describe('a backend whose box writes no results', () => {
  it('task cases that judge written files are not-applicable with the reason, never as-expected, and never run', async () => {
    const ran: string[] = [];
    const { task } = await runFake([averageCorrect, averageStdoutOnly, stdinFilter], ({ args }) => (ran.push(args.probe), {}), { caps: readOnlyBox });
    const byId = new Map(task.map((r) => [r.id, r]));
    for (const id of [averageCorrect.id, averageStdoutOnly.id]) {
      const r = byId.get(id);
      expect(r?.outcome, id).toBe('not-applicable');
      expect(r?.verdict).toBeNull();
      expect(r?.reason).toBe(
        `not run: the case judges files its program writes (result.json), and the backend declares that its box writes no results: ${WHY}`,
      );
    }
    // A case judged on stdout alone still runs (this script prints nothing: it is rejected, not skipped).
    expect(byId.get(stdinFilter.id)?.outcome).toBe('unexpected');
    expect(ran).not.toContain(averageCorrect.id);
    expect(ran).not.toContain(averageStdoutOnly.id);
    expect(ran).toContain(stdinFilter.id);

    const card = taskScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, task);
    expect(card.summary).toMatchObject({ total: 3, asExpected: 0, unexpected: 1, error: 0, notApplicable: 2 });
    expect(validateScorecard('task', card)).toEqual({ valid: true, errors: '' });
    const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(taskJunit(card)) as {
      testsuites: { testsuite: { testcase: { '@name': string; skipped?: { '@message': string } }[] } };
    };
    const skipped = xml.testsuites.testsuite.testcase.filter((c) => c.skipped !== undefined).map((c) => c['@name']);
    expect(skipped.sort()).toEqual([`${averageCorrect.id} ${averageCorrect.title}`, `${averageStdoutOnly.id} ${averageStdoutOnly.title}`].sort());
  });

  it('without the declaration the same cases run and are judged', async () => {
    const ran: string[] = [];
    const { task } = await runFake([averageCorrect], ({ args }) => (ran.push(args.probe), {}));
    expect(ran).toContain(averageCorrect.id);
    expect(task[0]?.outcome).toBe('unexpected');
  });
});

describe('command backend config: results', () => {
  const base = { name: 'ro', exec: { argv: ['{argv...}'] } };
  it('results: none needs resultsReason, and resultsReason needs results: none', () => {
    expect(CommandBackendConfigSchema.safeParse({ ...base, results: 'none' }).error?.issues.map((i) => i.path.join('.'))).toEqual(['resultsReason']);
    expect(CommandBackendConfigSchema.safeParse({ ...base, resultsReason: 'x' }).error?.issues.map((i) => i.path.join('.'))).toEqual(['resultsReason']);
    expect(CommandBackendConfigSchema.parse({ ...base, results: 'none', resultsReason: WHY })).toMatchObject({ results: 'none', resultsReason: WHY });
    expect(CommandBackendConfigSchema.parse(base).results).toBe('written');
  });
});
