import { exporterName } from './export/exporter-choice.js';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backend } from '../model/backend-contract.js';
import { prepareOutDir } from '../core/out-dir.js';
import { RESULTS_JOURNAL, hasResultsJournal, inRunOrder, openResultsJournal, recoverResultsJournal, type RecoveredRun } from './results-journal.js';
import { visibleLine, visibleText } from '../core/clean-text.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import { openLab, probeLabSupport, type LabSession } from '../lab/lab-session.js';
import { openLiveNetwork } from '../lab/live-network.js';
import type { RemoteWitness } from '../lab/witness/client.js';
import { packageRoot } from '../core/paths.js';
import { multiplex, type AnyResult, type RunReporter } from '../model/events.js';
import type { Policy } from '../model/policy.js';
import type { ProbeSpec } from '../model/probe.js';
import type { CardFiles, SecurityScorecard, TaskScorecard, WatchedDaemon, WriteCards } from '../model/scorecard.js';
import { notRunResults } from './not-run.js';
import { openOwnershipJournal, type OwnedResource } from '../core/ownership-journal.js';
import { sweepDeadRuns, type OwnershipSweepReport, type SweepHook } from './ownership/sweep.js';
import { defaultSweepHooks } from './ownership/sweep-hooks.js';
import { removeCgroupTree, runIdCgroups } from './ownership/run-id-cgroups.js';
import { newRunId, openRunContext, type LabForRun, type RunContext } from './run-context.js';
import { Runner } from './runner.js';
import { scrubHostPaths } from './scrub.js';
import type { ExporterChoice } from './export-stage.js';
import { backendFacts, exitCodeFor, securityScorecard, taskScorecard } from './scorecard-builder.js';
import { applyRunWaivers, type WaiverUse } from './waivers.js';
import type { Waiver } from '../model/waiver.js';
import { BackendFactSchema, type BackendFact, type RunEnvironment } from '../model/environment.js';
import { collectEnvironment } from './environment-facts.js';
import type { Shard } from './shard.js';

export interface RunSuiteOptions {
  backend: Backend;
  policy: Policy;
  probes: readonly ProbeSpec[];
  outDir: string;
  /** Writes the cards (JSON, JUnit, SARIF): reports/write-cards.ts `writeScorecards`, which the package entry passes. */
  writeCards: WriteCards;
  concurrency?: number;
  reporter?: RunReporter;
  signal?: AbortSignal;
  runId?: string;
  exporter?: ExporterChoice;
  /** No lab: network probes try the real addresses (disposable cloud machines only). */
  liveNetwork?: boolean;
  /** Where the ownership journal lives (default: /run/sandcheck/owners for root, a private dir otherwise). */
  ownershipDir?: string;
  /** Crash sweeps run at the start (default: the lab's and the backends'). */
  sweepHooks?: readonly SweepHook[];
  /** A `sandcheck witness serve` (connectWitness): the network probes are judged from its records instead of a lab of the run's own. */
  witness?: RemoteWitness;
  /** --trust-claims: an unclaimed required item is `unenforced` unrun instead of run and judged on what was observed. */
  trustClaims?: boolean;
  /** Accepted findings (--waivers): a crossing a live one matches is marked waived and not counted in the exit code. */
  waivers?: readonly Waiver[];
  /** YYYY-MM-DD (UTC) the waivers' expiry is judged against; default today. */
  today?: string;
  /**
   * What the cards record about where they ran (with --label); default: collected here (tool versions, kernel, cgroup mode, policy hash).
   * A promise is awaited after the crash sweep, so the tools' `--version` processes run beside it; a rejection ends the run before its journal opens.
   */
  environment?: RunEnvironment | Promise<RunEnvironment>;
  /** This run is slice index/total of a selection (--shard): recorded in both cards for `sandcheck merge`. */
  shard?: Shard;
  /** Real container daemons (--watch-daemon, checked by checkWatchDaemons) whose event logs are read after each execution; recorded in both cards. */
  watchDaemons?: readonly WatchedDaemon[];
}

export interface RunSuiteOutcome {
  security: SecurityScorecard;
  task: TaskScorecard;
  /** 4: an internal error ended the run (see internalError); the cards hold what was measured. */
  exitCode: 0 | 1 | 2 | 4;
  files: CardFiles;
  internalError?: string;
  /** The unfinished run found in outDir and turned into incomplete cards, if any. */
  recovered?: RecoveredRun;
  swept: OwnershipSweepReport;
  /** How each waiver fared (only with opts.waivers). */
  waivers?: WaiverUse[];
}

/** The lab when this machine can make one; otherwise the reason, and network probes will not run. */
async function tryOpenLab(runId: string, reporter?: RunReporter): Promise<{ session?: LabSession; noLabReason?: string }> {
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

/** Names and notices reach the terminal through the one cleaning rule (a policy name or a box's text could hold escapes). */
function cleaningReporter(r: RunReporter): RunReporter {
  return {
    ...r,
    ...(r.onRunStart
      ? {
          onRunStart: (i: Parameters<NonNullable<RunReporter['onRunStart']>>[0]) =>
            r.onRunStart?.({ ...i, backend: visibleLine(i.backend), policy: visibleLine(i.policy) }),
        }
      : {}),
    ...(r.onNotice ? { onNotice: (m: string) => r.onNotice?.(visibleText(m)) } : {}),
  };
}

const forRun = (lab: { session?: LabSession; remote?: RemoteWitness }): LabForRun | undefined => lab.session ?? lab.remote;

const resultIds = (rs: readonly { id: string }[]): Set<string> => new Set(rs.map((r) => r.id));

/**
 * One whole run: the output directory checked, leftovers of dead runs removed, lab context, every probe in a
 * fresh environment, both report cards written. Every resource is recorded in the ownership journal before it
 * exists and every result in the out dir's run journal as it comes, so nothing is lost or left whatever happens.
 */
const DESCRIBE_TIMEOUT_MS = 10_000;

async function describeBackend(backend: Backend): Promise<BackendFact[]> {
  if (!backend.describe) return [];
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), DESCRIBE_TIMEOUT_MS)));
  try {
    const facts = await Promise.race([backend.describe(), late]);
    return BackendFactSchema.array().max(16).safeParse(facts?.slice(0, 16)).data ?? [];
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
}

export async function runSuite(options: RunSuiteOptions): Promise<RunSuiteOutcome> {
  const opts = options.reporter ? { ...options, reporter: cleaningReporter(options.reporter) } : options;
  const runId = opts.runId ?? newRunId();
  const startedAt = new Date();
  const notice = (m: string): void => opts.reporter?.onNotice?.(m);
  await prepareOutDir(opts.outDir, notice);
  // Asked while the run goes (short-lived `--version` processes); never fails the run.
  const environment = opts.environment ? Promise.resolve(opts.environment) : collectEnvironment({ policy: opts.policy, backendName: opts.backend.name });
  // Awaited below; until then a rejection is not unhandled (a failure before that point is the one reported).
  environment.catch(() => undefined);
  let recovered: RecoveredRun | undefined;
  if (hasResultsJournal(opts.outDir)) {
    try {
      recovered = await recoverResultsJournal(opts.outDir, opts.writeCards, (id) => join(opts.outDir, `incomplete-${id}`));
      notice(
        `run ${recovered.runId} did not finish: its ${recovered.results} result(s) are in ${join(opts.outDir, `incomplete-${recovered.runId}`)} (marked incomplete)`,
      );
    } catch (err) {
      if (!(err instanceof SandcheckError) || err.code !== 'RECOVER_NOTHING') throw err;
      // A journal torn before its first line was whole holds nothing; kept aside, it never blocks this directory.
      const aside = join(opts.outDir, `run-journal.unreadable-${Date.now()}.jsonl`);
      await rename(join(opts.outDir, RESULTS_JOURNAL), aside);
      notice(`${err.message}; moved it to ${aside}`);
    }
  }
  const journal = openOwnershipJournal(runId, opts.ownershipDir);
  const swept = await sweepDeadRuns({
    ...(opts.ownershipDir ? { dir: opts.ownershipDir } : {}),
    hooks: opts.sweepHooks ?? defaultSweepHooks(),
    keepRunId: runId,
  });
  for (const r of swept.removed) notice(`removed a leftover of a run that died: ${r}`);
  for (const k of swept.kept) notice(`left a leftover of a run that died: ${k.what}: ${k.reason}`);

  // Claims asked of the adapter itself (an rpc process) are fetched before anything reads them.
  await opts.backend.prepare?.(opts.policy);
  let runEnvironment: RunEnvironment;
  try {
    runEnvironment = await environment;
  } catch (err) {
    // Nothing was made yet: the ownership journal goes with the run that never started.
    journal.close();
    throw err;
  }
  const results = openResultsJournal(opts.outDir, {
    runId,
    startedAt,
    backend: backendFacts(opts.backend, opts.policy),
    policy: opts.policy,
    environment: runEnvironment,
    ...(opts.watchDaemons ? { watchedDaemons: opts.watchDaemons } : {}),
    selection: opts.probes.map((p) => p.id),
  });
  // Stops the probes still running when the harness itself fails; an interrupt comes through opts.signal.
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  const interrupted = (): boolean => opts.signal?.aborted ?? false;
  const teardownProblems: string[] = [];

  const wantsNetwork = opts.probes.some((p) => p.kind === 'security' && p.category === 'network');
  const labNs: OwnedResource = { kind: 'netns', name: `sc-${runId}` };
  let live: Awaited<ReturnType<typeof openLiveNetwork>> | undefined;
  let lab: { session?: LabSession; remote?: RemoteWitness; noLabReason?: string } = { noLabReason: 'no network probe selected' };
  let backendRun: { close(): Promise<{ items: string[] }> } | undefined;
  let run: RunContext | undefined;
  let setupError: unknown;
  try {
    live = wantsNetwork && opts.liveNetwork ? await openLiveNetwork() : undefined;
    const remoteBoxes = opts.backend.capabilities(opts.policy).boxNetwork === 'remote';
    if (live) lab = { noLabReason: 'live network' };
    else if (wantsNetwork && opts.witness) {
      // A witness on another machine cannot see boxes started here; one on this machine is the lab itself.
      lab =
        remoteBoxes || opts.witness.handle
          ? { remote: opts.witness }
          : { noLabReason: `the witness at ${opts.witness.url} runs on another machine and this backend's boxes run here: no witness sees their network` };
    } else if (wantsNetwork && remoteBoxes) {
      lab = {
        noLabReason:
          "the backend's boxes run on another machine (boxNetwork: remote) and no witness sees their network: start `sandcheck witness serve` where they can reach it and pass --witness",
      };
    } else if (wantsNetwork && !interrupted()) {
      journal.own(labNs);
      lab = await tryOpenLab(runId, opts.reporter);
      if (!lab.session) journal.release(labNs);
    }
    if (!interrupted()) {
      run = await openRunContext(runId, {
        journal,
        watchDaemons: (opts.watchDaemons ?? []).map((d) => d.socket),
        ...(live
          ? { liveTraffic: (a, b) => live!.trafficBetween(a, b), liveProve: () => live!.proveWitness() }
          : forRun(lab)
            ? { lab: forRun(lab)! }
            : { noLabReason: lab.noLabReason ?? 'unknown' }),
      });
    }
    // The run's decoy credentials go to the backend's control plane too (e.g. a private dockerd's environment).
    if (!interrupted() && run) backendRun = await opts.backend.openRun?.({ runId, controllerEnv: run.controllerEnv, ...(run.lab ? { lab: run.lab } : {}) });
  } catch (err) {
    setupError = err;
  }

  let fatal: unknown;
  let collected: AnyResult[] = [];
  if (run && setupError === undefined) {
    const scratchDir = run.scratchDir;
    const journalReporter: RunReporter = { onProbeEnd: (r) => results.append(scrubHostPaths(r, scratchDir)) };
    opts.reporter?.onRunStart?.({ runId, backend: opts.backend.name, policy: opts.policy.name, total: opts.probes.length });
    try {
      const runner = new Runner({
        backend: opts.backend,
        policy: opts.policy,
        probes: opts.probes,
        run,
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        reporter: opts.reporter ? multiplex([journalReporter, opts.reporter]) : journalReporter,
        signal,
        onFatal: () => stop.abort(),
        exporter: opts.exporter ?? 'reference',
        ...(opts.trustClaims === true ? { trustClaims: true } : {}),
        artifactsDir: join(opts.outDir, 'artifacts'),
      });
      const out = await runner.run();
      collected = [...out.security.map((r) => ({ kind: 'security' as const, ...r })), ...out.task.map((r) => ({ kind: 'task' as const, ...r }))];
    } catch (err) {
      fatal = err;
      stop.abort();
    }
  }

  // Asked while the backend's daemon still runs; bounded, and a backend that cannot tell is not an error.
  const described = await describeBackend(opts.backend);

  // Teardown: every step runs whatever the others did.
  const step = async (what: string, f: () => Promise<void>): Promise<void> => {
    try {
      await f();
    } catch (err) {
      teardownProblems.push(`${what}: ${errorMessage(err)}`);
    }
  };
  await step('run context', async () => run?.dispose());
  await step('backend', async () => {
    for (const l of (await backendRun?.close())?.items ?? []) notice(`backend teardown: ${l}`);
  });
  await step('live network', async () => live?.close());
  await step('lab', async () => {
    const closed = await lab.session?.close();
    if (!lab.session) return;
    for (const l of closed?.leftovers ?? []) notice(`lab teardown: ${l}`);
    if ((closed?.leftovers ?? []).length === 0) journal.release(labNs);
    else teardownProblems.push('lab leftovers');
  });
  await step('cgroups named after the run', async () => {
    // Anything still named after this run once every part closed is a leftover (a backend's cgroup parent, …): ours to remove.
    for (const path of runIdCgroups(runId)) {
      await removeCgroupTree(path);
      notice(`teardown: removed a cgroup the backend left: ${path}`);
    }
  });
  for (const p of teardownProblems) notice(`teardown: ${p}`);

  if (setupError !== undefined && !interrupted()) {
    // Nothing ran (a backend that cannot start, …): no reports, the usual error.
    results.finish();
    if (teardownProblems.length === 0) journal.close();
    throw setupError;
  }
  if (setupError !== undefined || !run) {
    collected = notRunResults(opts.probes, opts.policy, { code: 'INTERRUPTED', message: 'not run: the run was interrupted during set-up' });
  } else if (fatal !== undefined) {
    const got = results.collected();
    const done = resultIds([...got.security, ...got.task]);
    // In the run's order, as its cards list results when it finishes (the journal holds them as they came).
    collected = inRunOrder(
      [
        ...got.security.map((r) => ({ kind: 'security' as const, ...r })),
        ...got.task.map((r) => ({ kind: 'task' as const, ...r })),
        ...notRunResults(
          opts.probes.filter((p) => !done.has(p.id)),
          opts.policy,
          { code: 'INTERNAL', message: `not run: the run ended on an internal error (${errorMessage(fatal)})` },
        ),
      ],
      opts.probes.map((p) => p.id),
    );
  }
  const wasInterrupted = interrupted();
  opts.reporter?.onRunEnd?.({ interrupted: wasInterrupted });
  const meta = {
    runId,
    environment: described.length > 0 ? { ...runEnvironment, backendFacts: described } : runEnvironment,
    startedAt,
    finishedAt: new Date(),
    interrupted: wasInterrupted,
    incomplete: wasInterrupted || fatal !== undefined || setupError !== undefined,
    exporter: exporterName(opts.exporter ?? 'reference'),
    ...(opts.trustClaims === true ? { trustClaims: true } : {}),
    ...(opts.shard ? { shard: opts.shard } : {}),
    ...(opts.watchDaemons && opts.watchDaemons.length > 0 ? { watchedDaemons: [...opts.watchDaemons] } : {}),
    network: live
      ? 'the live network (--live-network): a packet capture on this machine'
      : lab.session
        ? `the run's own lab (${lab.session.handle.netnsPath})`
        : lab.remote
          ? `the witness ${lab.remote.info.witnessId} at ${lab.remote.url} (sandcheck witness serve)${lab.remote.handle ? `, lab ${lab.remote.handle.netnsPath} on this machine` : ', on another machine'}`
          : `no witness: ${lab.noLabReason ?? 'unknown'}`,
  };
  const waived = applyRunWaivers(
    collected.flatMap((r) => (r.kind === 'security' ? [withoutKind(r)] : [])),
    opts.backend.name,
    opts.waivers ?? [],
    opts.today,
  );
  const security = waived.results;
  const task = collected.flatMap((r) => (r.kind === 'task' ? [withoutKind(r)] : []));
  const written = await opts.writeCards(
    opts.outDir,
    {
      security: securityScorecard(opts.backend, opts.policy, meta, security),
      task: taskScorecard(opts.backend, opts.policy, meta, task),
    },
    { harnessPeakUntilWritten: true },
  );
  results.finish();
  if (teardownProblems.length === 0) journal.close();
  const internalError = fatal === undefined ? undefined : fatal instanceof SandcheckError ? `${fatal.code}: ${fatal.message}` : errorMessage(fatal);
  if (internalError)
    notice(`internal error: ${internalError}; the probes still running were stopped and what was measured is in the reports (marked incomplete)`);
  return {
    security: written.security,
    task: written.task,
    exitCode: internalError ? 4 : exitCodeFor(written.security, written.task),
    files: written.files,
    ...(internalError ? { internalError } : {}),
    ...(recovered ? { recovered } : {}),
    swept,
    ...(opts.waivers ? { waivers: waived.uses } : {}),
  };
}

function withoutKind<T extends { kind: string }>(r: T): Omit<T, 'kind'> {
  const { kind: _kind, ...rest } = r;
  return rest;
}
