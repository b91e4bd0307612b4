import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeBackend, fakeMarkers, type FakeScript } from '../../backends/fake/fake-backend.js';
import { SandcheckError } from '../../core/errors.js';
import type { RunReporter } from '../../model/events.js';
import type { ProbeSpec } from '../../model/probe.js';
import { readBootIdSync } from '../../core/ownership-journal.js';
import { runSuite, type RunSuiteOptions } from '../../index.js';
import { writeScorecards } from '../../reports/write-cards.js';
import { backendFacts } from '../../harness/scorecard-builder.js';
import { RESULTS_JOURNAL, recoverResultsJournal } from '../../harness/results-journal.js';
import { validateScorecard } from '../../reports/validate.js';
import { securitySuite } from '../../suites/index.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandcheck-test-recovery-'));
  made.push(d);
  return d;
}

const local = securitySuite.filter((p) => p.category !== 'network' && !p.companion && !p.followUp);
const [slow, fast, third] = local as [ProbeSpec, ProbeSpec, ProbeSpec];
/** Scheduled as waiting work: as many start at once as -j allows, whatever the machine's cores (a CPU-bound one waits for a core). */
const atOnce = (probes: ProbeSpec[]): ProbeSpec[] => probes.map((p) => ({ ...p, load: 'wait' }));

/** A well-behaved payload that prints its markers and exits 0. */
const quiet: FakeScript = ({ files }) => {
  const m = fakeMarkers({ files });
  return { stdout: `${m.start}${m.done}` };
};

async function suite(over: Partial<RunSuiteOptions> & { script?: FakeScript } = {}) {
  const outDir = over.outDir ?? join(await tempDir(), 'out');
  const { script, ...rest } = over;
  return runSuite({
    backend: new FakeBackend(script ?? quiet),
    policy: FAST_POLICY,
    probes: [fast],
    outDir,
    ownershipDir: join(await tempDir(), 'owners'),
    sweepHooks: [],
    ...rest,
  });
}

describe('reports that survive', () => {
  it('an --out that is a file is refused before anything runs (exit 3 class), with what to do', async () => {
    const file = join(await tempDir(), 'out.txt');
    writeFileSync(file, 'not a directory');
    let started = 0;
    const err = await suite({ outDir: file, script: (i) => ((started += 1), quiet(i)) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('OUT_DIR_UNUSABLE');
    expect((err as SandcheckError).isUsage).toBe(true);
    expect((err as SandcheckError).hint).toMatch(/directory/);
    expect(started).toBe(0);
  });

  it('an environment handed over as a promise that fails ends the run before anything runs, and its ownership journal goes', async () => {
    const owners = join(await tempDir(), 'owners');
    let started = 0;
    const environment = Promise.reject(new SandcheckError('CONFIG_INVALID', 'cannot read the backend config'));
    // As run-command does: handled from the start, awaited (and thrown) by runSuite once it needs it.
    environment.catch(() => undefined);
    const err = await suite({ ownershipDir: owners, environment, script: (i) => ((started += 1), quiet(i)) }).catch((e: unknown) => e);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect(started).toBe(0);
    expect((await readdir(owners)).filter((f) => f.endsWith('.jsonl'))).toEqual([]);
  });

  it('a missing --out is created, with a notice', async () => {
    const outDir = join(await tempDir(), 'deep', 'out');
    const notices: string[] = [];
    const r = await suite({ outDir, reporter: { onNotice: (m) => notices.push(m) } });
    expect(notices.some((n) => n.includes('created the output directory'))).toBe(true);
    expect(existsSync(r.files.securityJson)).toBe(true);
    expect(r.security.run.incomplete).toBe(false);
    // A finished run leaves no journal behind.
    expect(existsSync(join(outDir, RESULTS_JOURNAL))).toBe(false);
  });

  it('an internal error mid-run stops the probes still running and still writes what was measured (exit 4)', async () => {
    let slowStopped = false;
    let slowRunning = (): void => undefined;
    const slowInExec = new Promise<void>((resolve) => (slowRunning = resolve));
    const script: FakeScript = (input) => {
      if (input.args.probe === slow.id) {
        input.request.signal.addEventListener('abort', () => (slowStopped = true));
        slowRunning();
        return { ...quiet(input), hang: true };
      }
      return quiet(input);
    };
    // The fast probe ends only once the slow one is in its exec: otherwise (under load) the fast one can finish before
    // the slow one has even put its files, whose exec then starts already stopped and never sees an abort event.
    const backend = new FakeBackend(script);
    const create = backend.create.bind(backend);
    backend.create = async (policy, ctx) => {
      const env = await create(policy, ctx);
      const exec = env.exec.bind(env);
      env.exec = async (request) => {
        if ((JSON.parse(request.argv[2] ?? '{}') as { probe?: string }).probe === fast.id) await slowInExec;
        return exec(request);
      };
      return env;
    };
    // A harness bug stands in here as a reporter that throws when the fast probe ends.
    const reporter: RunReporter = {
      onProbeEnd: (r) => {
        if (r.id === fast.id) throw new Error('boom in the harness');
      },
    };
    const r = await suite({ backend, probes: atOnce([slow, fast, third]), concurrency: 2, reporter });
    expect(r.exitCode).toBe(4);
    expect(r.internalError).toContain('boom in the harness');
    expect(slowStopped).toBe(true);
    expect(r.security.run.incomplete).toBe(true);
    const byId = new Map(r.security.results.map((x) => [x.id, x]));
    expect(byId.get(fast.id)?.harnessError).toBeUndefined();
    expect(byId.get(slow.id)?.harnessError?.code).toBe('INTERRUPTED');
    expect(byId.get(third.id)?.harnessError?.code).toBe('INTERNAL');
    // In the run's order, as a finished run lists them: not as they came (fast, then slow, then the ones never run).
    expect(r.security.results.map((x) => x.id)).toEqual([slow.id, fast.id, third.id]);
    expect(validateScorecard('security', JSON.parse(readFileSync(r.files.securityJson, 'utf8'))).valid).toBe(true);
  });

  it('an interrupt during back-end start-up gives interrupted reports, not a BACKEND_UNAVAILABLE error', async () => {
    const interrupt = new AbortController();
    const backend = new FakeBackend(quiet);
    let opened = 0;
    Object.assign(backend, {
      openRun: async () => {
        opened += 1;
        interrupt.abort();
        // What a private daemon killed by the same Ctrl-C looks like.
        throw new SandcheckError('BACKEND_UNAVAILABLE', 'connect ECONNREFUSED /run/sandcheck/docker.sock');
      },
    });
    const r = await suite({ backend, probes: [slow, fast], signal: interrupt.signal });
    expect(opened).toBe(1);
    expect(r.security.run.interrupted).toBe(true);
    expect(r.security.run.incomplete).toBe(true);
    expect(r.security.results.map((x) => x.harnessError?.code)).toEqual(['INTERRUPTED', 'INTERRUPTED']);
    expect(r.security.results.every((x) => x.verdict === 'inconclusive')).toBe(true);
  });

  it('a probe whose backend call breaks after an interrupt is inconclusive: interrupted, not a harness socket error', async () => {
    const interrupt = new AbortController();
    const backend = new FakeBackend(quiet);
    const create = backend.create.bind(backend);
    backend.create = async (policy, ctx) => {
      const env = await create(policy, ctx);
      env.exec = async () => {
        interrupt.abort();
        throw new Error('socket hang up');
      };
      return env;
    };
    const r = await suite({ backend, probes: [fast], signal: interrupt.signal });
    const [res] = r.security.results;
    expect(res?.verdict).toBe('inconclusive');
    expect(res?.harnessError?.code).toBe('INTERRUPTED');
    expect(res?.reason).toMatch(/interrupted/);
    expect(res?.reason).not.toMatch(/socket hang up/);
  });

  it('the journal of a run that died becomes valid scorecards marked incomplete (next run and report --recover)', async () => {
    const outDir = await tempDir();
    const first = await suite({ outDir, probes: [fast, third] });
    // Rebuild what a SIGKILLed run leaves: its start line and one result, owned by a pid that is gone.
    const gone = spawnSync('true').pid ?? 999_999;
    const start = {
      type: 'start',
      runId: 'rkilled001',
      pid: gone,
      startTime: 1,
      bootId: readBootIdSync(),
      startedAt: new Date().toISOString(),
      backend: backendFacts(new FakeBackend(quiet), FAST_POLICY),
      policy: FAST_POLICY,
    };
    const one = first.security.results[0];
    const journal = join(outDir, RESULTS_JOURNAL);
    appendFileSync(journal, `${JSON.stringify(start)}\n${JSON.stringify({ type: 'result', kind: 'security', result: one })}\n{"type":"result","ki`);
    const notices: string[] = [];
    await suite({ outDir, reporter: { onNotice: (m) => notices.push(m) } });
    expect(notices.some((n) => n.includes('rkilled001 did not finish'))).toBe(true);
    const recoveredDir = join(outDir, 'incomplete-rkilled001');
    expect((await readdir(recoveredDir)).sort()).toEqual(['security.json', 'security.junit.xml', 'security.sarif', 'task.json', 'task.junit.xml']);
    const card = JSON.parse(readFileSync(join(recoveredDir, 'security.json'), 'utf8')) as {
      run: { incomplete: boolean; id: string };
      results: { id: string }[];
    };
    expect(validateScorecard('security', card).valid).toBe(true);
    expect(card.run).toMatchObject({ id: 'rkilled001', incomplete: true });
    expect(card.results.map((x) => x.id)).toEqual([one?.id]);

    // The same through `report --recover DIR`: written into DIR itself.
    const other = await tempDir();
    appendFileSync(join(other, RESULTS_JOURNAL), `${JSON.stringify(start)}\n`);
    const rec = await recoverResultsJournal(other, writeScorecards);
    expect(rec).toMatchObject({ runId: 'rkilled001', results: 0 });
    expect(validateScorecard('task', JSON.parse(readFileSync(join(other, 'task.json'), 'utf8'))).valid).toBe(true);
    expect(existsSync(join(other, RESULTS_JOURNAL))).toBe(false);
  });

  it("report --recover lists results in the run's order, as the finished run's cards do, not in the order they came", async () => {
    const order = [slow, fast, third];
    // Each probe's exec waits until the next one in the run's order has ended: they end in reverse.
    const ended = new Map(
      order.map((p) => {
        let resolve = (): void => undefined;
        const promise = new Promise<void>((r) => (resolve = r));
        return [p.id, { promise, resolve: () => resolve() }];
      }),
    );
    const backend = new FakeBackend(quiet);
    const create = backend.create.bind(backend);
    backend.create = async (policy, ctx) => {
      const env = await create(policy, ctx);
      const exec = env.exec.bind(env);
      env.exec = async (request) => {
        const id = (JSON.parse(request.argv[2] ?? '{}') as { probe?: string }).probe;
        const next = order[order.findIndex((p) => p.id === id) + 1];
        if (next) await ended.get(next.id)?.promise;
        return exec(request);
      };
      return env;
    };
    const outDir = await tempDir();
    let journal = '';
    const finished = await suite({
      backend,
      outDir,
      probes: atOnce(order),
      concurrency: 3,
      reporter: {
        onProbeEnd: (r) => {
          ended.get(r.id)?.resolve();
          // The journal as a run killed right after its last result would leave it.
          if (r.id === slow.id) journal = readFileSync(join(outDir, RESULTS_JOURNAL), 'utf8');
        },
      },
    });
    const ids = order.map((p) => p.id);
    expect(finished.security.results.map((x) => x.id)).toEqual(ids);
    const [startLine = '', ...resultLines] = journal.trimEnd().split('\n');
    expect(resultLines.map((l) => (JSON.parse(l) as { result: { id: string } }).result.id)).toEqual([...ids].reverse());
    const dead = await tempDir();
    const start = { ...(JSON.parse(startLine) as Record<string, unknown>), pid: spawnSync('true').pid ?? 999_999, startTime: 1 };
    writeFileSync(join(dead, RESULTS_JOURNAL), `${[JSON.stringify(start), ...resultLines].join('\n')}\n`);
    await recoverResultsJournal(dead, writeScorecards);
    const card = JSON.parse(readFileSync(join(dead, 'security.json'), 'utf8')) as { results: { id: string }[] };
    expect(card.results.map((x) => x.id)).toEqual(ids);
  });

  it('a journal torn inside its first line never blocks the directory: it is moved aside with a notice', async () => {
    const outDir = await tempDir();
    writeFileSync(join(outDir, RESULTS_JOURNAL), '{"type":"sta');
    const notices: string[] = [];
    const r = await suite({ outDir, reporter: { onNotice: (m) => notices.push(m) } });
    expect(r.internalError).toBeUndefined();
    expect(existsSync(r.files.securityJson)).toBe(true);
    expect(notices.some((n) => /moved it to .*run-journal\.unreadable-\d+\.jsonl/.test(n))).toBe(true);
    expect((await readdir(outDir)).filter((n) => n.startsWith('run-journal.unreadable-'))).toHaveLength(1);
  });

  it('recovery refuses while the run that writes the journal is alive', async () => {
    const outDir = await tempDir();
    const start = {
      type: 'start',
      runId: 'ralive0001',
      pid: process.pid,
      startTime: Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ')[19]),
      bootId: readBootIdSync(),
      startedAt: new Date().toISOString(),
      backend: backendFacts(new FakeBackend(quiet), FAST_POLICY),
      policy: FAST_POLICY,
    };
    appendFileSync(join(outDir, RESULTS_JOURNAL), `${JSON.stringify(start)}\n`);
    const err = await recoverResultsJournal(outDir, writeScorecards).catch((e: unknown) => e);
    expect((err as SandcheckError).code).toBe('RUN_ALIVE');
  });
});
