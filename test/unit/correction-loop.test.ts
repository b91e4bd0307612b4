import { describe, expect, it } from 'vitest';
import { REFERENCE_POLICY, type Policy } from '../../harness/model/policy.js';
import { explainPolicy, policyBounds } from '../../harness/policy-explain.js';
import type { TaskCase } from '../../harness/model/probe.js';
import { endToEndBudgetMs } from '../../harness/task/correction-loop.js';
import { averageCorrect } from '../../probes/average-correct/probe.js';
import { averageCorrected } from '../../probes/average-corrected/probe.js';
import { expectedMean } from '../../probes/_shared/average-task.js';
import { FAST_POLICY, runFake } from '../helpers/fake-run.js';

const withCorrections = (n: number, base: Policy = FAST_POLICY): Policy => ({ ...base, attempts: { ...base.attempts, corrections: n } });
const good = () => ({ 'result.json': JSON.stringify({ mean: expectedMean(), rows: 12 }) });

describe('policy explain', () => {
  it('gives the essay\'s numbers for the reference policy', () => {
    const b = policyBounds(REFERENCE_POLICY);
    expect(b.worstCaseSeconds).toBe(132);
    expect(b.exportFilesTimesSizeMb).toBe(100);
    expect(b.exportWorstCaseMb).toBe(40);
    expect(explainPolicy(REFERENCE_POLICY)).toContain('(1 + 3) × 30 s + 12 s = 132 s');
    expect(explainPolicy(REFERENCE_POLICY)).toContain('20 files × 5 MB = 100 MB, capped at 40 MB aggregate → 40 MB');
    expect(endToEndBudgetMs(REFERENCE_POLICY)).toBe(132_000);
  });
});

describe('the correction loop', () => {
  // attempt-1 crashes, attempt-2 is wrong, attempt-3 is right (by payload file name).
  const script = ({ request, files }: { request: { argv: readonly string[] }; files: ReadonlyMap<string, Uint8Array> }) => {
    const source = Buffer.from(files.get('payload.py') ?? new Uint8Array()).toString('utf8');
    void request;
    if (source.includes('Attempt 1')) return { stderr: `Traceback…\n${'x'.repeat(5000)}\nKeyError: 'valeu'\n`, exitCode: 1 };
    if (source.includes('Attempt 2')) return { files: { 'result.json': JSON.stringify({ mean: 31.9, rows: 11 }) } };
    return { files: good() };
  };

  it('accepts a case fixed on attempt 3 when 3 corrections are allowed, with each attempt and the budget recorded', async () => {
    const { task, backend } = await runFake([averageCorrected], script, { policy: withCorrections(3) });
    const r = task[0]!;
    expect(r).toMatchObject({ verdict: 'accepted', outcome: 'as-expected', reproducible: true });
    expect(r.attempts.map((a) => a.verdict)).toEqual(['rejected', 'rejected', 'accepted']);
    expect(r.reason).toMatch(/accepted on attempt 3 of 4/);
    expect(r.budget).toMatchObject({ maxAttempts: 4, exhausted: false, limitMs: endToEndBudgetMs(withCorrections(3)) });
    // 3 attempts + 1 replay, each in its own fresh environment.
    expect(backend.environments).toHaveLength(4);
    const feedback = JSON.parse(Buffer.from(backend.environments[1]!.files.get('feedback.json')!).toString('utf8')) as { stderrTail: string; exitCode: number };
    expect(feedback.exitCode).toBe(1);
    expect(feedback.stderrTail.length).toBeLessThanOrEqual(2048);
    expect(feedback.stderrTail).toContain("KeyError: 'valeu'");
    expect(backend.environments[0]!.files.has('feedback.json')).toBe(false);
  });

  it('rejects the same case with "attempt budget exhausted" when only 1 correction is allowed', async () => {
    const { task, backend } = await runFake([averageCorrected], script, { policy: withCorrections(1) });
    expect(task[0]).toMatchObject({ verdict: 'rejected', outcome: 'unexpected', reproducible: null });
    expect(task[0]?.reason).toMatch(/attempt budget exhausted: 2 attempts allowed \(1 \+ 1 corrections\)/);
    expect(task[0]?.budget.exhausted).toBe(true);
    expect(backend.environments).toHaveLength(2);
  });

  it('stops at the end-to-end budget even when attempts remain', async () => {
    const hanging: TaskCase = { ...averageCorrected, id: 'hangs', attempts: [{ payloadFile: 'attempt-1.py' }, { payloadFile: 'attempt-1.py' }, { payloadFile: 'attempt-1.py' }] };
    const policy: Policy = { ...withCorrections(3), attempts: { corrections: 3, queueStartupSeconds: 0.1 } };
    const { task } = await runFake([hanging], () => ({ hang: true }), { policy, graceMs: 5000 });
    // Budget (1+3)×0.4 s + 0.1 s = 1.7 s; each attempt is cut by the harness deadline or the remaining budget.
    expect(task[0]?.verdict).toBe('rejected');
    expect(task[0]?.budget.elapsedMs).toBeLessThan(1700 + 1000);
    expect(task[0]?.reason).toMatch(/end-to-end budget of 2 s exhausted|attempt budget exhausted/);
  });

  it('marks an accepted case non-reproducible when its replay gives other artifacts', async () => {
    let n = 0;
    const { task } = await runFake([{ ...averageCorrect, id: 'flaky' }], () => {
      n += 1;
      return { files: { 'result.json': JSON.stringify({ mean: expectedMean(), rows: 12, nonce: n }) } };
    });
    expect(task[0]).toMatchObject({ verdict: 'accepted', reproducible: false });
    expect(task[0]?.replayNote).toMatch(/result.json differ/);
  });
});
