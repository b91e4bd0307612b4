import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import { packageRoot } from '../../core/paths.js';
import { securityScorecard, taskScorecard, exitCodeFor } from '../../harness/scorecard-builder.js';
import { securityJunit, taskJunit } from '../../reports/junit-report.js';
import { generatedSchemas } from '../../scripts/schemas.js';
import { validateScorecard } from '../../reports/validate.js';
import { securitySuite, taskSuite } from '../../suites/index.js';
import { FAST_POLICY, fakeMarkers, runFake } from '../helpers/fake-run.js';

const HOSTILE = Buffer.concat([
  Buffer.from('NUL:\u0000 ESC:\u001b[31mred\u001b[0m lone-ESC:\u001b BEL:\u0007 cdata:]]> <xml attr="x"> &amp; '),
  Buffer.from([0xff, 0xfe, 0xc3, 0x28]),
  Buffer.from(' \uFFFE end'),
]);

async function hostileRun() {
  const result = await runFake([...securitySuite, ...taskSuite], ({ args, ctx, files }) => {
    const m = fakeMarkers({ files });
    const leak = args.probe === 'secret-decoy-env' ? ctx.controllerEnv['AWS_SECRET_ACCESS_KEY'] : '';
    return { stdout: Buffer.concat([Buffer.from(m.start), HOSTILE, Buffer.from(`${leak}\n${m.done}`)]), stderr: HOSTILE, exitCode: 3 };
  });
  const meta = { runId: 'rtest0', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
  const backend = new FakeBackend(() => ({}));
  return {
    security: securityScorecard(backend, FAST_POLICY, meta, result.security),
    task: taskScorecard(backend, FAST_POLICY, meta, result.task),
  };
}

describe('reports', () => {
  it('committed JSON Schemas match the zod schemas (run `npm run schema` after a model change)', async () => {
    for (const [name, schema] of Object.entries(generatedSchemas())) {
      const committed: unknown = JSON.parse(await readFile(join(packageRoot(), 'reports', 'schema', name), 'utf8'));
      expect(committed, name).toEqual(schema);
    }
  });

  it('scorecards validate against the published schema, and a broken one does not', async () => {
    const { security, task } = await hostileRun();
    expect(validateScorecard('security', security)).toMatchObject({ valid: true });
    expect(validateScorecard('task', task)).toMatchObject({ valid: true });
    expect(validateScorecard('security', { ...security, summary: { held: 'all' } }).valid).toBe(false);
    expect(validateScorecard('task', { ...task, results: [{ id: 'x' }] }).valid).toBe(false);
  });

  it('JUnit parses with a strict XML parser even with NUL, ESC, invalid UTF-8 and ]]> in the output', async () => {
    const { security, task } = await hostileRun();
    for (const xml of [securityJunit(security), taskJunit(task)]) {
      expect(XMLValidator.validate(xml)).toBe(true);
      expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
      expect(xml).not.toContain('[31m');
    }
    const sec = securityJunit(security);
    expect(sec).toContain('NUL:\\x00');
    expect(sec).toContain('lone-ESC:\\x1b');
  });

  it('maps verdicts to JUnit per DESIGN: crossed → failure, inconclusive → error, n/a → skipped with reason', async () => {
    const { security } = await hostileRun();
    const mixed = {
      ...security,
      results: [
        { ...security.results[0]!, id: 'a', verdict: 'held' as const },
        { ...security.results[0]!, id: 'b', verdict: 'crossed' as const },
        { ...security.results[0]!, id: 'c', verdict: 'inconclusive' as const },
        { ...security.results[0]!, id: 'd', verdict: 'not-applicable' as const, reason: 'backend cannot enforce files.hostPaths' },
      ],
    };
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(securityJunit(mixed)) as {
      testsuites: { testsuite: { name: string; testcase: Record<string, unknown>[] } };
    };
    const suite = parsed.testsuites.testsuite;
    expect(suite.name).toBe('fake.files');
    const byName = new Map(suite.testcase.map((c) => [String(c['name']).split(' ')[0], c]));
    expect(byName.get('a')).not.toHaveProperty('failure');
    expect(byName.get('a')).not.toHaveProperty('error');
    expect(byName.get('b')).toHaveProperty('failure');
    expect(byName.get('c')).toHaveProperty('error');
    expect(byName.get('d')).toHaveProperty('skipped');
    expect(JSON.stringify(byName.get('d'))).toContain('N/A: backend cannot enforce files.hostPaths');
    for (const c of suite.testcase) expect(c['classname']).toBe('fake.files');
  });

  it('task JUnit shows expected and actual verdicts; exit code follows both cards', async () => {
    const { security, task } = await hostileRun();
    const xml = taskJunit(task);
    expect(xml).toMatch(/<system-out><!\[CDATA\[expected: accept, verdict: \w+, outcome: [\w-]+, /);
    expect(xml).toContain('fake.task');
    expect(security.summary.crossed).toBeGreaterThan(0);
    expect(exitCodeFor(security, task)).toBe(1);
  });

  it('exit code: 1 for any crossed, unenforced or unexpected task verdict, else 2 for inconclusive or harness errors, else 0 (README table)', async () => {
    const { security, task } = await hostileRun();
    const sec = (s: Partial<typeof security.summary>) => ({
      ...security,
      summary: { total: 5, held: 5, crossed: 0, unenforced: 0, inconclusive: 0, notApplicable: 0, ...s },
    });
    const tsk = (s: Partial<typeof task.summary>) => ({ ...task, summary: { total: 3, asExpected: 3, unexpected: 0, error: 0, nonReproducible: 0, ...s } });
    const cases: [Partial<typeof security.summary>, Partial<typeof task.summary>, number][] = [
      [{}, {}, 0],
      [{ notApplicable: 2 }, { nonReproducible: 1 }, 0],
      [{ crossed: 1 }, {}, 1],
      [{ unenforced: 1 }, {}, 1],
      [{}, { unexpected: 1 }, 1],
      [{ crossed: 1, inconclusive: 3 }, { error: 1 }, 1],
      [{ inconclusive: 1 }, {}, 2],
      [{}, { error: 1 }, 2],
    ];
    for (const [s, t, code] of cases) expect(exitCodeFor(sec(s), tsk(t)), JSON.stringify([s, t])).toBe(code);
  });
});
