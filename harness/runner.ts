import { randomBytes, createHash } from 'node:crypto';
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Backend, Capabilities, Environment } from '../model/backend-contract.js';
import { countersReadBySandcheck } from '../backends/own-counters.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import type { AnyResult, RunReporter } from '../model/events.js';
import { outside } from '../model/evidence.js';
import type { ExecObservation } from '../model/observation.js';
import type { Policy } from '../model/policy.js';
import { startCompanion } from './companion.js';
import { boxPlacement, placementLine, placementRefusal } from './network-placement.js';
import type { Judgement, Observation, ProbeContext, ProbeSpec, SecurityProbe, TaskCase } from '../model/probe.js';
import type { ExportOutcome, ExporterChoice } from './export-stage.js';
import { describeStop, exportEvidence } from '../model/evidence-lines.js';
import { compileCanaries, type CompiledCanaries } from '../lab/canary-forms.js';
import { Mutex } from '../core/mutex.js';
import { expectedMs, isNetworkProbe, probeLoad, type ProbeLoad } from './probe-cost.js';
import { runScheduled, slotsFor, type FollowUp } from './schedule.js';
import { scrubHostPaths } from './scrub.js';
import { policyRequires } from '../model/required-items.js';
import { artifactHashes, compareReplay, runCorrectionLoop, type ExecuteVariant, type LoopOutcome } from './task/correction-loop.js';
import { noResultsReason, notApplicableTask } from './task/no-results.js';
import { taskIdentity, taskNotRun } from './not-run.js';
import type { SecurityResult, TaskResult } from '../model/scorecard.js';
import { executeOnce } from './execute-once.js';
import { confirmHeld } from './host-confirm.js';
import { DEFAULT_GRACE_MS, harnessDeadlineMs, type ExecHow, type ExecSetting } from './exec-payload.js';
import type { RunContext } from './run-context.js';

export { DEFAULT_GRACE_MS, harnessDeadlineMs, outputCeilingBytes } from './exec-payload.js';

export interface RunnerOptions {
  backend: Backend;
  policy: Policy;
  probes: readonly ProbeSpec[];
  run: RunContext;
  /** Keep an unclaimed required item `unenforced` without running its probes (the claim's word, not behaviour). */
  trustClaims?: boolean;
  /** At most this many environments at once (schedule.ts `slotsFor`); unset: sized from the cores. */
  concurrency?: number;
  graceMs?: number;
  reporter?: RunReporter;
  /** Aborted on SIGINT/SIGTERM: in-flight execs are killed, nothing new starts. */
  signal?: AbortSignal;
  /** The exporter artifacts pass before anything leaves the box: reference (default) or naive (positive controls only). */
  exporter?: ExporterChoice;
  /** Where accepted task artifacts are exported (e.g. out/artifacts); none when unset. */
  artifactsDir?: string;
  /** A harness failure (not a probe outcome) stopped scheduling: the caller stops the probes still running. */
  onFatal?: (err: unknown) => void;
}

/**
 * Why a probe does not run: `not-applicable` for causes outside the box (no lab) or items the
 * policy does not ask for. An item the policy requires that the backend does not claim is run like
 * any other (its result says `claimed: false`); only with `trustClaims` is it `unenforced` (a failure)
 * unrun.
 */
export function gateVerdict(
  probe: SecurityProbe,
  caps: Capabilities,
  policy: Policy,
  noLabReason?: string,
  trustClaims = false,
): { verdict: 'not-applicable' | 'unenforced'; reason: string } | undefined {
  // Network probes never send traffic from the machine's own namespace: without a lab they do not run.
  if (probe.category === 'network' && noLabReason !== undefined) return { verdict: 'not-applicable', reason: `no lab: ${noLabReason}` };
  const unseen = caps.notObservable?.[probe.policyItem];
  if (unseen !== undefined) return { verdict: 'not-applicable', reason: unseen };
  if (caps.isolation === 'none') return undefined; // the control runs everything: it is the positive control
  if (probe.enforcedBy === 'exporter') return undefined; // the harness's exporter, not the backend, holds this line
  if (caps.enforces.includes(probe.policyItem)) return undefined;
  const why = caps.notEnforcedReasons?.[probe.policyItem] ?? `backend cannot enforce ${probe.policyItem}`;
  if (policyRequires(policy, probe.policyItem)) {
    // Every payload stops itself at a fixed ceiling (the control runs them all): what is not claimed is run and
    // judged on what was observed, the claim recorded beside it; --trust-claims keeps the claim's word instead.
    if (!trustClaims) return undefined;
    return { verdict: 'unenforced', reason: `the policy requires ${probe.policyItem} and the backend does not enforce it: ${why}` };
  }
  return { verdict: 'not-applicable', reason: `${probe.policyItem} is not required by policy ${policy.name}; the backend does not enforce it: ${why}` };
}

/** Whether the backend claims the probe's item (the exporter's lines are the harness's own claim). */
export function claimedBy(probe: SecurityProbe, caps: Capabilities): boolean {
  return probe.enforcedBy === 'exporter' || caps.enforces.includes(probe.policyItem);
}

interface Executed {
  obs: Observation;
  durationMs: number;
}

/** A task whose correction loop has ended and whose replay is still to run (as separate scheduled work). */
interface DeferredTask {
  expectedMs: number;
  finish(): Promise<AnyResult>;
}

interface HarnessFailure {
  code: string;
  message: string;
}

/** Time for the last packets and decoy log lines of a network probe to arrive. */
const NETWORK_SETTLE_MS = 300;

export class Runner {
  private readonly graceMs: number;
  private readonly networkLock = new Mutex();

  constructor(private readonly opts: RunnerOptions) {
    this.graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
  }

  async run(): Promise<{ security: SecurityResult[]; task: TaskResult[] }> {
    const { probes, reporter } = this.opts;
    const results: (AnyResult | undefined)[] = new Array(probes.length);
    let fatal: { err: unknown } | undefined;
    const settle = async (index: number, load: ProbeLoad, outcome: Promise<AnyResult | DeferredTask>): Promise<void | FollowUp> => {
      try {
        const result = await outcome;
        if ('finish' in result) {
          // The task's replay runs as work of its own: the slot is free for other probes meanwhile.
          return { item: { expectedMs: result.expectedMs, load }, run: async () => void (await settle(index, load, result.finish())) };
        }
        results[index] = result;
        reporter?.onProbeEnd?.(result);
      } catch (err) {
        // A harness bug: nothing new starts, the caller stops what still runs, and everything started is awaited before failing.
        fatal ??= { err };
        this.opts.onFatal?.(err);
      }
    };
    const runAt = async (index: number): Promise<void | FollowUp> => {
      const probe = probes[index];
      if (!probe || fatal) return;
      reporter?.onProbeStart?.({ id: probe.id, kind: probe.kind });
      return settle(index, probeLoad(probe), this.runOne(probe));
    };
    const items = probes.map((p) => ({
      expectedMs: expectedMs(p, this.opts.policy),
      load: probeLoad(p),
      ...(isNetworkProbe(p) ? { exclusive: 'network', alone: true } : p.kind === 'security' && p.watchHost ? { exclusive: 'host-watch' } : {}),
    }));
    const slots = slotsFor(this.opts.concurrency, undefined, this.opts.backend.capabilities(this.opts.policy).lightBoxes === true);
    await runScheduled(items, slots, runAt, () => fatal !== undefined);
    if (fatal) throw fatal.err;
    const all = results.filter((r): r is AnyResult => r !== undefined).map((r) => scrubHostPaths(r, this.opts.run.scratchDir));
    return {
      security: all.flatMap((r) => (r.kind === 'security' ? [stripKind(r)] : [])),
      task: all.flatMap((r) => (r.kind === 'task' ? [stripKind(r)] : [])),
    };
  }

  private async context(): Promise<ProbeContext> {
    const { run, policy } = this.opts;
    const nonce = randomBytes(8).toString('hex');
    const hostProbeDir = join(run.scratchDir, `probe-${nonce}`);
    await mkdir(hostProbeDir, { recursive: true });
    return {
      policy,
      runId: run.runId,
      nonce,
      canaries: run.canaries,
      decoyDir: run.decoyDir,
      hostDecoys: {
        processPid: run.hostDecoys.processPid,
        socketPath: run.hostDecoys.socketPath,
        agentSocketPath: run.hostDecoys.agentSocketPath,
        agentSocketInode: run.hostDecoys.agentSocketInode,
        ...(run.hostDecoys.abstractName !== undefined ? { abstractName: run.hostDecoys.abstractName } : {}),
        ...(run.hostDecoys.abstractUnavailable !== undefined ? { abstractUnavailable: run.hostDecoys.abstractUnavailable } : {}),
        keyDescriptions: run.hostDecoys.keys.map((k) => k.description),
        ...(run.hostDecoys.keyringUnavailable !== undefined ? { keyringUnavailable: run.hostDecoys.keyringUnavailable } : {}),
      },
      hostProbeDir,
    };
  }

  private async runOne(probe: ProbeSpec): Promise<AnyResult | DeferredTask> {
    const ctx = await this.context();
    const started = performance.now();
    if (probe.kind === 'security') {
      const gate = gateVerdict(
        probe,
        this.opts.backend.capabilities(this.opts.policy),
        this.opts.policy,
        this.opts.run.labTraffic ? undefined : (this.opts.run.noLabReason ?? 'the run has no lab'),
        this.opts.trustClaims,
      );
      if (gate) return this.securityResult(probe, { ...gate, evidence: [] }, 0);
      const unsafe = await this.unclaimedNetworkUnseen(probe);
      if (unsafe !== undefined) return this.securityResult(probe, { verdict: 'unenforced', reason: unsafe, evidence: [] }, 0);
      const unfit = probe.hostPrecondition?.(ctx);
      if (unfit !== undefined) return this.securityResult(probe, { verdict: 'not-applicable', reason: unfit, evidence: [] }, 0);
    }
    if (this.opts.signal?.aborted) {
      return this.failed(probe, { code: 'INTERRUPTED', message: 'not run: the run was interrupted' }, 0);
    }
    if (probe.kind === 'task') {
      const unfit = noResultsReason(probe, this.opts.backend.capabilities(this.opts.policy), ctx);
      return unfit === undefined ? this.runTask(probe, ctx, started) : notApplicableTask(probe, this.opts.policy, unfit);
    }
    let executed: Executed;
    try {
      executed = await this.execute(probe, ctx);
    } catch (err) {
      // Whatever broke after an interrupt (a daemon's socket hang-up, …) broke because of it.
      if (this.opts.signal?.aborted)
        return this.failed(probe, { code: 'INTERRUPTED', message: 'the run was interrupted while this probe ran' }, performance.now() - started);
      const code = err instanceof SandcheckError ? err.code : 'HARNESS';
      return this.failed(probe, { code, message: errorMessage(err) }, performance.now() - started);
    }
    const { obs } = executed;
    const durationMs = performance.now() - started;
    if (obs.exec.killedBy === 'harness-interrupt' || (this.opts.signal?.aborted && obs.exec.startError !== undefined)) {
      return this.failed(probe, { code: 'INTERRUPTED', message: 'the run was interrupted while this probe ran' }, durationMs, obs.exec);
    }
    let judgement: Judgement;
    try {
      judgement = confirmHeld(obs, probe.judge(obs, ctx));
    } catch (err) {
      return this.failed(probe, { code: 'JUDGE', message: `judge threw: ${errorMessage(err)}` }, durationMs, obs.exec);
    }
    const decoyGone = probe.hostDecoyProcess && judgement.verdict === 'held' ? this.opts.run.hostDecoys.processGone() : undefined;
    if (decoyGone !== undefined) {
      judgement = {
        verdict: 'inconclusive',
        reason: `${decoyGone} by the time the box finished: there was nothing of the host's to reach, so the box's silence proves nothing`,
        evidence: [outside('host-proc-status', decoyGone, 'host'), ...judgement.evidence],
      };
    }
    if (obs.leftovers.length > 0) {
      judgement.evidence.push(...obs.leftovers.map((l) => outside('teardown', l, 'host')));
    }
    if (obs.placement) judgement.evidence.push(outside('host-netns', obs.placement, '/proc/<pid>/ns/net'));
    return this.securityResult(probe, judgement, durationMs, obs.exec);
  }

  private async execute(probe: SecurityProbe, ctx: ProbeContext): Promise<Executed> {
    const started = performance.now();
    if (probe.category === 'network') {
      // One network probe at a time, so every packet and decoy hit in the window is this probe's.
      const release = await this.networkLock.acquire();
      try {
        const from = Date.now();
        const first = await this.executeWithCompanion(probe, ctx);
        await new Promise((r) => setTimeout(r, NETWORK_SETTLE_MS));
        // The witness proves in this very window that it can see (a marked query both witnesses must record).
        await this.opts.run.proveLabWitness?.();
        const traffic = await this.opts.run.labTraffic?.(from - 50);
        if (traffic) first.network = traffic;
        return { obs: first, durationMs: performance.now() - started };
      } finally {
        release();
      }
    }
    const first = await this.executeWithCompanion(probe, ctx);
    if (probe.kind === 'security' && probe.hostCleanup) first.hostResidue = await probe.hostCleanup(ctx);
    if (probe.followUp && first.exec.killedBy !== 'harness-interrupt') {
      const secondCtx = { ...ctx, nonce: randomBytes(8).toString('hex') };
      first.followUp = await this.executeOnce(probe, secondCtx, { extraArgs: probe.followUp(ctx, first) });
    }
    return { obs: first, durationMs: performance.now() - started };
  }

  /** One execution, with its companion (a second box of the run, alongside: lateral movement, covert channels) started first and stopped after. */
  private async executeWithCompanion(probe: ProbeSpec, ctx: ProbeContext): Promise<Observation> {
    const companion =
      probe.kind === 'security' && probe.companion ? await startCompanion(probe, ctx, this.opts.policy, () => this.createEnvironment()) : undefined;
    let obs: Observation;
    try {
      obs = await this.executeOnce(probe, ctx, { extraArgs: companion?.args ?? {} });
    } finally {
      await companion?.stop();
    }
    if (companion) {
      obs.companionReady = companion.ready;
      obs.companionAnnounced = companion.announced;
    }
    return obs;
  }

  private compiled: CompiledCanaries | undefined;

  /** The run's canaries in every form, compiled once (the metadata canaries are in the set from the start). */
  private compiledCanaries(): CompiledCanaries {
    return (this.compiled ??= compileCanaries(this.opts.run.canaries.all));
  }

  private execSetting(): ExecSetting {
    const { policy, run, signal } = this.opts;
    const adapterCounters = !countersReadBySandcheck(this.opts.backend);
    return {
      policy,
      graceMs: this.graceMs,
      canaries: this.compiledCanaries(),
      canaryList: run.canaries.all,
      scratchDir: run.scratchDir,
      ...(signal ? { signal } : {}),
      ...(adapterCounters ? { adapterCounters } : {}),
    };
  }

  /** The run's first placement check, in a box of its own: whether the host sees this backend's programs, or why none may run. */
  private firstPlacement: Promise<{ visible: boolean; refusal?: string }> | undefined;

  /**
   * Before each network probe's payload, in that probe's own environment: where the backend put this box, read from
   * the host (harness/network-placement.ts). A box in the host's own network namespace, or in one with a way out that
   * is not the lab, would send the probe to the real network: UNSAFE_NETWORK, and the payload never runs there. Where
   * the host could not see the first box's program (a user-space kernel, a remote box) it is not asked again; a later
   * box it cannot see, where it saw the first, is refused too.
   */
  private async checkPlacement(env: Environment): Promise<string | undefined> {
    const lab = this.opts.run.lab;
    if (!lab || this.opts.backend.capabilities(this.opts.policy).boxNetwork === 'remote') return undefined;
    // The first time in a box of its own: a program the host never sees is aborted, which on some backends kills the
    // whole environment.
    const first = await (this.firstPlacement ??= this.placementInOwnBox(lab.netnsPath));
    if (first.refusal !== undefined) throw new SandcheckError('UNSAFE_NETWORK', first.refusal);
    if (!first.visible) return undefined;
    const placement = await boxPlacement(env, lab.netnsPath);
    if (!placement) {
      throw new SandcheckError(
        'UNSAFE_NETWORK',
        "not run, for safety: the host saw the program of this backend's first box, but not this box's: its network namespace could not be checked, and a box placed elsewhere could reach the real network; name every box's host processes (hostPids) the same way",
      );
    }
    const unsafe = placementRefusal(placement);
    if (unsafe !== undefined) throw new SandcheckError('UNSAFE_NETWORK', unsafe);
    return placementLine(placement);
  }

  /**
   * The one probe family not run unclaimed: a network probe whose item the backend does not claim, where the host
   * cannot see where its boxes are placed (a box outside the lab could reach the real network).
   */
  private async unclaimedNetworkUnseen(probe: SecurityProbe): Promise<string | undefined> {
    const caps = this.opts.backend.capabilities(this.opts.policy);
    const lab = this.opts.run.lab;
    if (probe.category !== 'network' || !lab || caps.isolation === 'none' || caps.boxNetwork === 'remote' || claimedBy(probe, caps)) return undefined;
    const first = await (this.firstPlacement ??= this.placementInOwnBox(lab.netnsPath));
    if (first.visible || first.refusal !== undefined) return undefined;
    const why = caps.notEnforcedReasons?.[probe.policyItem] ?? `backend cannot enforce ${probe.policyItem}`;
    return `not run: the policy requires ${probe.policyItem}, the backend does not claim it (${why}), and the host cannot see where this backend places its boxes, so an unclaimed network probe could reach the real network`;
  }

  private async placementInOwnBox(labNetnsPath: string): Promise<{ visible: boolean; refusal?: string }> {
    // A box that cannot even be made here fails its probe on its own; the check then has nothing to say.
    const env = await this.createEnvironment().catch(() => undefined);
    if (!env) return { visible: false };
    try {
      const placement = await boxPlacement(env, labNetnsPath);
      const refusal = placementRefusal(placement);
      return { visible: placement !== undefined, ...(refusal !== undefined ? { refusal } : {}) };
    } finally {
      await env.destroy().catch(() => undefined);
    }
  }

  private createEnvironment(): Promise<Environment> {
    const { backend, policy, run } = this.opts;
    return backend.create(policy, {
      runId: run.runId,
      controllerEnv: run.controllerEnv,
      scratchDir: run.scratchDir,
      ...(run.lab ? { lab: run.lab } : {}),
    });
  }

  /** One fresh environment: create, put, exec under the harness deadline, get, destroy, then look for what survived. */
  private executeOnce(probe: ProbeSpec, ctx: ProbeContext, how: ExecHow): Promise<Observation> {
    const network = probe.kind === 'security' && probe.category === 'network';
    return executeOnce(
      {
        run: this.opts.run,
        policy: this.opts.policy,
        exporter: this.opts.exporter ?? 'reference',
        setting: this.execSetting(),
        createEnvironment: () => this.createEnvironment(),
        ...(network ? { beforePayload: (env: Environment) => this.checkPlacement(env) } : {}),
      },
      probe,
      ctx,
      how,
    );
  }

  private securityResult(
    probe: SecurityProbe,
    j: { verdict: SecurityResult['verdict']; reason: string; evidence: SecurityResult['evidence'] },
    durationMs: number,
    observation?: ExecObservation,
  ): AnyResult {
    return {
      kind: 'security',
      id: probe.id,
      title: probe.title,
      category: probe.category,
      policyItem: probe.policyItem,
      severity: probe.severity,
      verdict: j.verdict,
      reason: j.reason,
      remediation: probe.remediation,
      claimed: claimedBy(probe, this.opts.backend.capabilities(this.opts.policy)),
      evidence: j.evidence,
      durationMs,
      ...(observation ? { observation } : {}),
    };
  }

  private async runTask(task: TaskCase, ctx: ProbeContext, started: number): Promise<AnyResult | DeferredTask> {
    const execute: ExecuteVariant = (variant, files, deadlineCapMs) =>
      this.executeOnce(variant, { ...ctx, nonce: randomBytes(8).toString('hex') }, { extraArgs: {}, files, deadlineCapMs });
    let loop;
    try {
      loop = await runCorrectionLoop(task, ctx, execute);
    } catch (err) {
      if (this.opts.signal?.aborted)
        return this.failed(task, { code: 'INTERRUPTED', message: 'the run was interrupted while this task ran' }, performance.now() - started);
      const code = err instanceof SandcheckError ? err.code : 'HARNESS';
      return this.failed(task, { code, message: errorMessage(err) }, performance.now() - started);
    }
    const final = loop.final;
    if (!final)
      return this.failed(
        task,
        this.opts.signal?.aborted ? { code: 'INTERRUPTED', message: 'the run was interrupted while this task ran' } : { code: 'HARNESS', message: loop.reason },
        performance.now() - started,
      );
    if (final.obs.exec.killedBy === 'harness-interrupt' || (this.opts.signal?.aborted && final.obs.exec.startError !== undefined)) {
      return this.failed(task, { code: 'INTERRUPTED', message: 'the run was interrupted while this task ran' }, performance.now() - started, final.obs.exec);
    }
    const loopMs = performance.now() - started;
    if (loop.accepted && !this.opts.signal?.aborted) {
      return {
        expectedMs: final.obs.exec.wallMs,
        finish: async () => {
          const replayStarted = performance.now();
          let replay: { reproducible: boolean; note: string } | undefined;
          if (!this.opts.signal?.aborted) {
            try {
              replay = compareReplay(final.obs, await execute(final.variant, final.files, harnessDeadlineMs(this.opts.policy, this.graceMs)));
            } catch (err) {
              replay = { reproducible: false, note: `replay failed: ${errorMessage(err)}` };
            }
          }
          return this.taskResult(task, loop, replay, loopMs + performance.now() - replayStarted);
        },
      };
    }
    return this.taskResult(task, loop, undefined, loopMs);
  }

  /** The task's result once its replay (if any) has run; durationMs is the work's own time, never its time in the queue. */
  private async taskResult(
    task: TaskCase,
    loop: LoopOutcome,
    replay: { reproducible: boolean; note: string } | undefined,
    durationMs: number,
  ): Promise<AnyResult> {
    const final = loop.final;
    if (!final) throw new SandcheckError('HARNESS', 'a task result without a final attempt');
    if (task.needsWorkspaceListing && final.obs.workspace === undefined) {
      return notApplicableTask(
        task,
        this.opts.policy,
        "not judged: the case is decided by the files left in the box's workspace, and the host cannot list this backend's workspace (it is not on the host)",
      );
    }
    const verdict = loop.accepted ? 'accepted' : 'rejected';
    const asExpected = (verdict === 'accepted') === (task.expected === 'accept');
    const { exec } = final.obs;
    const exported = loop.accepted && final.obs.export ? await this.publishArtifacts(task.id, final.obs.export) : undefined;
    return {
      ...taskIdentity(task),
      verdict,
      outcome: asExpected ? 'as-expected' : 'unexpected',
      reason: loop.accepted || /exit|killed|stopped|signal/i.test(loop.reason) ? loop.reason : `${loop.reason} (${describeStop(exec)})`,
      evidence: [
        outside('exit-status', `${describeStop(exec)} after ${Math.round(exec.wallMs)} ms`),
        ...(final.result.evidence ?? []),
        ...(final.obs.export ? [exportEvidence(final.obs.export)] : []),
        ...(exported ? [outside('exporter', exported, 'artifacts')] : []),
      ],
      artifacts: [...artifactHashes(final.obs)].map(([path, sha256]) => ({
        path,
        sha256,
        bytes: final.obs.artifacts.find((a) => a.path === path)?.content?.byteLength ?? 0,
      })),
      attempts: loop.attempts,
      budget: loop.budget,
      reproducible: replay ? replay.reproducible : null,
      ...(replay ? { replayNote: replay.note } : {}),
      durationMs,
      observation: exec,
    };
  }

  /** Copies an accepted task's exported files to the run's artifacts directory and checks they are byte-identical. */
  private async publishArtifacts(id: string, out: ExportOutcome): Promise<string | undefined> {
    if (!this.opts.artifactsDir || out.decision.exported.length === 0) return undefined;
    const dest = join(this.opts.artifactsDir, id);
    await rm(dest, { recursive: true, force: true });
    await cp(out.destDir, dest, { recursive: true, errorOnExist: false, verbatimSymlinks: true });
    const same = await Promise.all(
      out.decision.exported.map(
        async (f) =>
          createHash('sha256')
            .update(await readFile(join(dest, f.path)))
            .digest('hex') === f.sha256,
      ),
    );
    return `${out.decision.exported.length} file(s) exported ${same.every(Boolean) ? 'byte-identical' : 'WITH DIFFERENCES'} to artifacts/${id}: ${out.decision.exported.map((f) => `${f.path} sha256 ${f.sha256.slice(0, 16)}…`).join(', ')}`;
  }

  private failed(probe: ProbeSpec, error: HarnessFailure, durationMs: number, observation?: ExecObservation): AnyResult {
    const reason = `harness error (${error.code}): ${error.message}`;
    if (probe.kind === 'security') {
      return {
        ...(this.securityResult(probe, { verdict: 'inconclusive', reason, evidence: [] }, durationMs, observation) as Extract<AnyResult, { kind: 'security' }>),
        harnessError: error,
      };
    }
    return { ...taskNotRun(probe, this.opts.policy, durationMs), outcome: 'error', reason, ...(observation ? { observation } : {}), harnessError: error };
  }
}

function stripKind<T extends { kind: string }>(r: T): Omit<T, 'kind'> {
  const { kind: _kind, ...rest } = r;
  return rest;
}
