import { performance } from 'node:perf_hooks';
import { describe, expect, it, vi } from 'vitest';
import { REFERENCE_POLICY, type Policy } from '../../model/policy.js';
import { explainPolicy, policyBounds } from '../../harness/policy-explain.js';
import type { ProbeContext, TaskCase } from '../../model/probe.js';
import { endToEndBudgetMs, runCorrectionLoop } from '../../harness/task/correction-loop.js';
import { averageCorrect } from '../../tasks/average-correct/probe.js';
import { averageCorrected } from '../../tasks/average-corrected/probe.js';
import { averageHangsAfterResult } from '../../tasks/average-hangs-after-result/probe.js';
import { averageHardcoded } from '../../tasks/average-hardcoded/probe.js';
import { averageCrashesAfterResult } from '../../tasks/average-crashes-after-result/probe.js';
import { exitCodePropagation } from '../../tasks/exit-code-propagation/probe.js';
import { AVERAGE_HIDDEN, expectedMean } from '../../tasks/_shared/average-task.js';
import { FAST_POLICY, fakeMarkers, runFake } from '../helpers/fake-run.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { honestAverage, obsWith } from '../helpers/task-fakes.js';

const withCorrections = (n: number, base: Policy = FAST_POLICY): Policy => ({ ...base, attempts: { ...base.attempts, corrections: n } });
const visibleAnswer = () => ({ 'result.json': JSON.stringify({ mean: expectedMean(), rows: 12 }) });
const INPUTS = 1 + AVERAGE_HIDDEN;

describe('policy explain', () => {
  it("gives the essay's numbers for the reference policy", () => {
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
    return { files: honestAverage(files) };
  };

  it('accepts a case fixed on attempt 3 when 3 corrections are allowed, with each attempt and the budget recorded', async () => {
    const { task, backend } = await runFake([averageCorrected], script, { policy: withCorrections(3) });
    const r = task[0]!;
    expect(r).toMatchObject({ verdict: 'accepted', outcome: 'as-expected', reproducible: true });
    expect(r.attempts.map((a) => a.verdict)).toEqual(['rejected', 'rejected', 'accepted']);
    expect(r.reason).toMatch(/accepted on attempt 3 of 4/);
    expect(r.budget).toMatchObject({ maxAttempts: 4, exhausted: false, limitMs: endToEndBudgetMs(withCorrections(3), INPUTS) });
    // Attempts 1 and 2 fail on the visible input; attempt 3 runs on every input; then 1 replay: each a fresh environment.
    expect(backend.environments).toHaveLength(1 + 1 + INPUTS + 1);
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

  it('stops at the end-to-end budget even when attempts remain: the harness deadline is capped by what is left of it', async () => {
    const hanging: TaskCase = {
      ...averageCorrected,
      id: 'hangs',
      hiddenInputs: undefined,
      attempts: [{ payloadFile: 'attempt-1.py' }, { payloadFile: 'attempt-1.py' }, { payloadFile: 'attempt-1.py' }],
    } as TaskCase;
    const policy: Policy = { ...withCorrections(3), attempts: { corrections: 3, queueStartupSeconds: 0.1 } };
    // Budget (1+3)×0.4 s + 0.1 s = 1.7 s, shorter than one per-exec deadline (0.4 s + 5 s grace): the first
    // attempt is stopped by the harness at the budget's end, and no second attempt starts.
    const { task, backend } = await runFake([hanging], () => ({ hang: true }), { policy, graceMs: 5000 });
    const r = task[0]!;
    expect(r.verdict).toBe('rejected');
    expect(r.reason).toMatch(/^end-to-end budget of 2 s exhausted after 1 attempts; last: the program did not end by itself: killed by harness-deadline/);
    expect(r.budget).toMatchObject({ limitMs: 1700, exhausted: true });
    expect(r.observation?.killedBy).toBe('harness-deadline');
    expect(r.observation?.harnessDeadlineMs).toBeLessThanOrEqual(1700);
    expect(backend.environments).toHaveLength(1);
  });

  it("runs an accepted case's replay as work of its own: one slot, and a probe queued behind the case runs before the replay", async () => {
    const started: string[] = [];
    const probe = { ...secretDecoyEnv, id: 'queued-probe' };
    const { task, security } = await runFake(
      [averageCorrect, probe],
      ({ files }) => {
        const payload = Buffer.from(files.get('payload.py') ?? new Uint8Array()).toString('utf8');
        const isTask = payload.includes('result.json');
        started.push(isTask ? 'task' : 'probe');
        return isTask ? { files: honestAverage(files) } : { stdout: `${fakeMarkers({ files }).start}${fakeMarkers({ files }).done}` };
      },
      { concurrency: 1 },
    );
    expect(task[0]).toMatchObject({ verdict: 'accepted', reproducible: true });
    expect(security).toHaveLength(1);
    // The case's inputs first (it costs more), then the probe, then the replay (it costs what one execution did).
    expect(started).toEqual([...Array<string>(INPUTS).fill('task'), 'probe', 'task']);
  });

  it('marks an accepted case non-reproducible when its replay gives other artifacts', async () => {
    let n = 0;
    const { task } = await runFake([{ ...averageCorrect, id: 'flaky' }], ({ files }) => {
      n += 1;
      // The same numbers each time, laid out differently: the replay hashes differ.
      return { files: { 'result.json': JSON.stringify(JSON.parse(honestAverage(files)['result.json'] ?? '{}'), null, n % 2 === 0 ? 2 : 0) } };
    });
    expect(task[0]).toMatchObject({ verdict: 'accepted', reproducible: false });
    expect(task[0]?.replayNote).toMatch(/result.json differ/);
  });
});

describe('the run counts', () => {
  it('the right result followed by a hang is rejected, naming the harness deadline (it was accepted)', async () => {
    const { task } = await runFake([averageCorrect], ({ files }) => ({ files: honestAverage(files), hang: true }));
    expect(task[0]).toMatchObject({ verdict: 'rejected', outcome: 'unexpected' });
    expect(task[0]?.reason).toMatch(/the program did not end by itself: killed by harness-deadline \(expected exit 0\)/);
    expect(task[0]?.observation?.killedBy).toBe('harness-deadline');
  });

  it('the right result followed by exit 1 and a traceback is rejected, naming the exit code (it was accepted)', async () => {
    const { task } = await runFake([averageCorrect], ({ files }) => ({ files: honestAverage(files), stderr: 'Traceback…\nKeyError: median\n', exitCode: 1 }));
    expect(task[0]?.verdict).toBe('rejected');
    expect(task[0]?.reason).toMatch(/the program ended with exit code 1, expected 0/);
  });

  it("a program the backend stopped at its output limit is rejected naming that limit, not a bare SIGKILL (the harness's killedBy stays none)", async () => {
    const { task } = await runFake([averageCorrect], ({ files }) => ({
      files: honestAverage(files),
      stdout: 'x'.repeat(1000),
      exitCode: null,
      signal: 'SIGKILL',
      outputTruncated: true,
    }));
    const r = task[0]!;
    const stop = "stopped by the backend's output limit after 1000 bytes of stdout+stderr (ended by SIGKILL)";
    expect(r.verdict).toBe('rejected');
    expect(r.reason).toContain(`the program did not end by itself: ${stop} (expected exit 0); whatever it wrote before does not count`);
    expect(r.evidence.find((e) => e.witness === 'exit-status')?.detail).toMatch(
      /^stopped by the backend's output limit after 1000 bytes of stdout\+stderr \(ended by SIGKILL\) after \d+ ms$/,
    );
    expect(r.observation).toMatchObject({ killedBy: 'none', backendReport: { outputTruncated: true } });
    // A backend that cuts the output and lets the program exit on its own: the exit status says so too.
    const cut = await runFake([averageCorrect], ({ files }) => ({ files: honestAverage(files), stdout: 'x'.repeat(1000), exitCode: 1, outputTruncated: true }));
    expect(cut.task[0]?.reason).toContain(
      'the program ended with exit code 1 after the backend cut its output at its output limit (1000 bytes of stdout+stderr), expected 0',
    );
  });

  it('the built-in bad endings are expected rejections; a case that expects a failure code accepts exactly it', async () => {
    const { task } = await runFake([averageCrashesAfterResult, averageHangsAfterResult, exitCodePropagation], ({ args, files }) => {
      if (args.probe === 'exit-code-propagation') return { files: { 'status.json': '{"willExit": 3}' }, exitCode: 3 };
      return { files: honestAverage(files), ...(args.probe === 'average-hangs-after-result' ? { hang: true } : { exitCode: 1 }) };
    });
    expect(task.map((t) => [t.id, t.verdict, t.outcome])).toEqual([
      ['average-crashes-after-result', 'rejected', 'as-expected'],
      ['average-hangs-after-result', 'rejected', 'as-expected'],
      ['exit-code-propagation', 'accepted', 'as-expected'],
    ]);
    const exit0 = await runFake([exitCodePropagation], () => ({ files: { 'status.json': '{"willExit": 3}' }, exitCode: 0 }));
    expect(exit0.task[0]?.reason).toMatch(/exit code 0, expected 3/);
  });
});

describe('hidden inputs', () => {
  it('a program that hard-codes the visible answer is right on the visible input and rejected on a generated one, with the seed recorded', async () => {
    const { task, backend } = await runFake([averageHardcoded], () => ({ files: visibleAnswer() }));
    const r = task[0]!;
    expect(r).toMatchObject({ verdict: 'rejected', outcome: 'as-expected' });
    expect(r.reason).toMatch(/^on the hidden-1 input \(input seed [0-9a-f]{16}\): result.json is the visible input's answer/);
    expect(r.evidence.find((e) => e.witness === 'hidden-inputs')?.detail).toMatch(/right on 1, wrong on hidden-1/);
    // The visible input first, then the first generated one (under another file name); the third never ran.
    expect(backend.environments).toHaveLength(2);
    const csvNames = backend.environments.map((e) => [...e.files.keys()].filter((k) => k.endsWith('.csv')));
    expect(csvNames[0]).toEqual(['input/data.csv']);
    expect(csvNames[1]?.[0]).toMatch(/^input\/readings-[0-9a-f]{6}\.csv$/);
  });

  it('the honest program is accepted on every input; the same seed regenerates the same inputs', async () => {
    process.env['SANDCHECK_TASK_SEED'] = 'feedc0de';
    try {
      const runs = [
        await runFake([averageCorrect], ({ files }) => ({ files: honestAverage(files) })),
        await runFake([averageCorrect], ({ files }) => ({ files: honestAverage(files) })),
      ];
      for (const { task } of runs)
        expect(task[0]).toMatchObject({
          verdict: 'accepted',
          reason: expect.stringMatching(/^right on all 3 inputs \(1 visible, 2 generated, input seed [0-9a-f]{16}\)/),
        });
      const inputs = runs.map(({ backend }) =>
        backend.environments.slice(0, INPUTS).map((e) => Buffer.from([...e.files.entries()].find(([k]) => k.endsWith('.csv'))?.[1] ?? []).toString()),
      );
      expect(inputs[0]).toEqual(inputs[1]);
      expect(new Set(inputs[0]).size).toBe(INPUTS);
      expect(runs[0]?.task[0]?.reason.match(/input seed (\w+)/)?.[1]).toBe(runs[1]?.task[0]?.reason.match(/input seed (\w+)/)?.[1]);
    } finally {
      delete process.env['SANDCHECK_TASK_SEED'];
    }
  });
});

describe('hidden inputs and the end-to-end budget', () => {
  it('a budget that runs out between inputs is a rejection, never an acceptance on the inputs that ran', async () => {
    const policy: Policy = { ...FAST_POLICY, attempts: { corrections: 0, queueStartupSeconds: 0 } };
    let clock = 0;
    const now = vi.spyOn(performance, 'now').mockImplementation(() => clock);
    try {
      const ran: string[] = [];
      const outcome = await runCorrectionLoop(averageCorrect, { policy } as ProbeContext, async (_variant, files) => {
        ran.push(files.find((f) => f.path.endsWith('.csv'))?.path ?? '');
        clock += endToEndBudgetMs(policy, INPUTS); // the visible run (right) uses up the whole budget
        return obsWith(honestAverage(new Map(files.map((f) => [f.path, f.content]))));
      });
      expect(ran).toEqual(['input/data.csv']);
      expect(outcome.accepted).toBe(false);
      expect(outcome.reason).toMatch(/^end-to-end budget of 1 s exhausted after 1 attempts; last: right on 1 of 3 inputs; the others did not run/);
    } finally {
      now.mockRestore();
    }
  });
});
