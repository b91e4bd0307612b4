import { join } from 'node:path';
import type { Backend } from '../backends/contract.js';
import { writeJsonReport } from '../reports/json-report.js';
import { securityJunit, taskJunit, writeJunit } from '../reports/junit-report.js';
import { validateScorecard } from '../reports/validate.js';
import { SandcheckError, errorMessage } from './errors.js';
import { openLab, probeLabSupport, type LabSession } from '../lab/lab-session.js';
import { sweepStaleLabs } from '../lab/netns/sweep.js';
import { openLiveNetwork } from '../lab/live-network.js';
import { sweepStaleCgroups } from '../backends/bwrap/sweep.js';
import { packageRoot } from './paths.js';
import type { RunReporter } from './events.js';
import type { Policy } from './model/policy.js';
import type { ProbeSpec } from './model/probe.js';
import type { SecurityScorecard, TaskScorecard } from './model/scorecard.js';
import { newRunId, openRunContext } from './run-context.js';
import { Runner } from './runner.js';
import type { ExporterChoice } from './export-stage.js';
import { exitCodeFor, securityScorecard, taskScorecard } from './scorecard-builder.js';

export interface RunSuiteOptions {
  backend: Backend;
  policy: Policy;
  probes: readonly ProbeSpec[];
  outDir: string;
  concurrency?: number;
  reporter?: RunReporter;
  signal?: AbortSignal;
  runId?: string;
  exporter?: ExporterChoice;
  /** No lab: network probes try the real addresses (disposable cloud machines only). */
  liveNetwork?: boolean;
}

export interface RunSuiteOutcome {
  security: SecurityScorecard;
  task: TaskScorecard;
  exitCode: 0 | 1 | 2;
  files: { securityJson: string; taskJson: string; securityJunit: string; taskJunit: string };
}

/** The lab when this machine can make one; otherwise the reason, and network probes will not run. */
async function tryOpenLab(runId: string, reporter?: RunReporter): Promise<{ session?: LabSession; noLabReason?: string }> {
  // Leftovers of earlier runs that crashed: only those whose owner is gone.
  await sweepStaleLabs().catch(() => undefined);
  const support = await probeLabSupport();
  if (!support.available) {
    reporter?.onNotice?.(`no lab: ${support.reason} (${support.hint}); network probes are not applicable in this run`);
    return { noLabReason: support.reason };
  }
  try {
    return { session: await openLab(runId, packageRoot()) };
  } catch (err) {
    const reason = `the lab could not start: ${errorMessage(err)}`;
    reporter?.onNotice?.(`no lab: ${reason}; network probes are not applicable in this run`);
    return { noLabReason: reason };
  }
}

/** One whole run: lab context, every probe in a fresh environment, both report cards written. */
export async function runSuite(opts: RunSuiteOptions): Promise<RunSuiteOutcome> {
  const runId = opts.runId ?? newRunId();
  const startedAt = new Date();
  await sweepStaleCgroups().catch(() => undefined);
  const wantsNetwork = opts.probes.some((p) => p.kind === 'security' && p.category === 'network');
  const live = wantsNetwork && opts.liveNetwork ? await openLiveNetwork() : undefined;
  const lab = live ? { noLabReason: 'live network' } : wantsNetwork ? await tryOpenLab(runId, opts.reporter) : { noLabReason: 'no network probe selected' };
  let backendRun: { close(): Promise<{ items: string[] }> } | undefined;
  let run;
  try {
    backendRun = await opts.backend.openRun?.({ runId, ...(lab.session ? { lab: lab.session.handle } : {}) });
    run = await openRunContext(
      runId,
      live ? { liveTraffic: (a, b) => live.trafficBetween(a, b) } : lab.session ? { lab: lab.session } : { noLabReason: lab.noLabReason ?? 'unknown' },
    );
  } catch (err) {
    await backendRun?.close().catch(() => undefined);
    await lab.session?.close();
    await live?.close();
    throw err;
  }
  opts.reporter?.onRunStart?.({ runId, backend: opts.backend.name, policy: opts.policy.name, total: opts.probes.length });
  let results;
  try {
    const runner = new Runner({
      backend: opts.backend,
      policy: opts.policy,
      probes: opts.probes,
      run,
      ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
      ...(opts.reporter ? { reporter: opts.reporter } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      exporter: opts.exporter ?? 'reference',
      artifactsDir: join(opts.outDir, 'artifacts'),
    });
    results = await runner.run();
  } finally {
    await run.dispose();
    const backendLeft = await backendRun?.close();
    for (const l of backendLeft?.items ?? []) opts.reporter?.onNotice?.(`backend teardown: ${l}`);
    await live?.close();
    const closed = await lab.session?.close();
    for (const l of closed?.leftovers ?? []) opts.reporter?.onNotice?.(`lab teardown: ${l}`);
  }
  const interrupted = opts.signal?.aborted ?? false;
  opts.reporter?.onRunEnd?.({ interrupted });
  const meta = { runId, startedAt, finishedAt: new Date(), interrupted };
  const security = securityScorecard(opts.backend, opts.policy, meta, results.security);
  const task = taskScorecard(opts.backend, opts.policy, meta, results.task);
  for (const [kind, card] of [['security', security], ['task', task]] as const) {
    const check = validateScorecard(kind, card);
    if (!check.valid) throw new SandcheckError('HARNESS', `the ${kind} scorecard does not match its published schema: ${check.errors}`);
  }
  const files = {
    securityJson: join(opts.outDir, 'security.json'),
    taskJson: join(opts.outDir, 'task.json'),
    securityJunit: join(opts.outDir, 'security.junit.xml'),
    taskJunit: join(opts.outDir, 'task.junit.xml'),
  };
  await writeJsonReport(files.securityJson, security);
  await writeJsonReport(files.taskJson, task);
  await writeJunit(files.securityJunit, securityJunit(security));
  await writeJunit(files.taskJunit, taskJunit(task));
  return { security, task, exitCode: exitCodeFor(security, task), files };
}
