import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { PutFile } from '../../model/backend-contract.js';
import type { CaptureSummary } from '../../model/observation.js';
import type { Policy } from '../../model/policy.js';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import { outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../../model/probe.js';
import { inputVariants, taskSeed, withInput, type InputVariant } from '../../probes/_shared/task/hidden-inputs.js';
import { runGate } from './run-gate.js';
import { extrasOf } from '../../probes/_shared/task/task-case.js';

/** Only this much of the previous attempt's stderr is fed back (the essay: "only necessary diagnostics"). */
export const FEEDBACK_STDERR_BYTES = 2048;

export interface AttemptRecord {
  attempt: number;
  verdict: 'accepted' | 'rejected';
  reason: string;
  exitCode: number | null;
  signal: string | null;
  wallMs: number;
}

export interface LoopOutcome {
  accepted: boolean;
  reason: string;
  final: { obs: Observation; result: PredicateResult; variant: TaskCase; files: PutFile[] } | undefined;
  attempts: AttemptRecord[];
  budget: { limitMs: number; elapsedMs: number; maxAttempts: number; exhausted: boolean };
}

export type ExecuteVariant = (variant: TaskCase, files: PutFile[], deadlineCapMs: number) => Promise<Observation>;

/** T_worst = (1 + N) × T_turn + T_queue_and_startup, in milliseconds; a turn runs every input variant once. */
export function endToEndBudgetMs(policy: Policy, execsPerAttempt = 1): number {
  return (1 + policy.attempts.corrections) * execsPerAttempt * policy.resources.wallSeconds * 1000 + policy.attempts.queueStartupSeconds * 1000;
}

export function stderrTail(capture: CaptureSummary, bytes = FEEDBACK_STDERR_BYTES): string {
  const all = Buffer.concat([Buffer.from(capture.headBase64, 'base64'), Buffer.from(capture.tailBase64, 'base64')]);
  return all.subarray(Math.max(0, all.length - bytes)).toString('utf8');
}

function variantFor(task: TaskCase, index: number): TaskCase {
  const candidate = task.attempts?.[index];
  if (!candidate) return task;
  const { payload, payloadFile, source } = candidate;
  return {
    ...task,
    ...(payload !== undefined ? { payload } : {}),
    ...(payloadFile !== undefined ? { payloadFile } : {}),
    ...(source !== undefined ? { source } : {}),
  };
}

/** Only verified results leave the box: a result whose artifacts the exporter refused is not accepted. */
export function exportGate(result: PredicateResult, obs: Observation): PredicateResult {
  const decision = obs.export?.decision;
  if (!result.accepted || !decision || decision.accepted) return result;
  const why = decision.refusals
    .slice(0, 3)
    .map((r) => `${r.path}: ${r.rule}`)
    .join('; ');
  return { accepted: false, reason: `the predicate accepted it, but the exporter refused its artifacts (${why})`, evidence: result.evidence ?? [] };
}

/** The case's own input as the single visible variant, or its metamorphic variants for this run's seed. */
function variantsOf(task: TaskCase, ctx: ProbeContext, seed: string | undefined): InputVariant[] {
  const { hiddenInputs } = extrasOf(task);
  if (hiddenInputs && seed !== undefined) return inputVariants(hiddenInputs, seed, ctx);
  const stdin = task.stdin?.(ctx);
  return [{ label: 'visible', files: task.files?.(ctx) ?? [], ...(stdin ? { stdin } : {}), expected: undefined }];
}

/** Judged in this order: how the program ended, then the completion predicate, then the exporter. */
export function judgeRun(task: TaskCase, input: InputVariant, obs: Observation, ctx: ProbeContext): PredicateResult {
  const gate = runGate(obs.exec, extrasOf(task).expectedExit ?? 0);
  if (gate) return gate;
  let result: PredicateResult;
  try {
    result = task.predicate(obs, extrasOf(task).hiddenInputs ? withInput(ctx, input) : ctx);
  } catch (err) {
    // A bug in the predicate is the harness's failure, kept apart from the box's (and from execution errors).
    throw new SandcheckError('PREDICATE', `completion predicate threw: ${errorMessage(err)}`);
  }
  return exportGate(result, obs);
}

export interface LoopOptions {
  /** Seed of the generated inputs (default: fresh per run, or SANDCHECK_TASK_SEED). */
  seed?: string;
}

/** generate → execute → observe → correct, bounded by the attempt count and the end-to-end budget. */
export async function runCorrectionLoop(task: TaskCase, ctx: ProbeContext, execute: ExecuteVariant, opts: LoopOptions = {}): Promise<LoopOutcome> {
  const { policy } = ctx;
  const maxAttempts = 1 + policy.attempts.corrections;
  const candidates = task.attempts?.length ?? 1;
  const seed = extrasOf(task).hiddenInputs ? (opts.seed ?? taskSeed(task.id)) : undefined;
  const inputs = variantsOf(task, ctx, seed);
  const limitMs = endToEndBudgetMs(policy, inputs.length);
  const started = performance.now();
  const attempts: AttemptRecord[] = [];
  let feedback: Record<string, unknown> | undefined;
  let final: LoopOutcome['final'];
  let exhausted = false;
  let timeUp = false;
  for (let i = 0; i < candidates && !timeUp; i++) {
    if (i >= maxAttempts) {
      exhausted = true;
      break;
    }
    const program = variantFor(task, i);
    let attempt: { obs: Observation; result: PredicateResult } | undefined;
    const passed: string[] = [];
    for (const input of inputs) {
      const remaining = limitMs - (performance.now() - started);
      if (remaining <= 0) {
        timeUp = true;
        break;
      }
      const variant: TaskCase = { ...program, ...(input.stdin ? { stdin: () => input.stdin ?? new Uint8Array() } : {}) };
      const files = [...input.files, ...(feedback ? [{ path: 'feedback.json', content: Buffer.from(JSON.stringify(feedback)), readOnly: true }] : [])];
      const obs = await execute(variant, files, remaining);
      const judged = judgeRun(task, input, obs, ctx);
      const result = inputs.length === 1 ? judged : onInputs(judged, input, passed, inputs.length, seed);
      attempt = { obs, result };
      final = { obs, result, variant, files };
      if (!judged.accepted) break;
      passed.push(input.label);
    }
    if (!attempt) break;
    const { obs, result } = attempt;
    attempts.push({
      attempt: i + 1,
      verdict: result.accepted ? 'accepted' : 'rejected',
      reason: result.reason,
      exitCode: obs.exec.exitCode,
      signal: obs.exec.signal,
      wallMs: obs.exec.wallMs,
    });
    if (result.accepted) break;
    feedback = { attempt: i + 1, accepted: false, exitCode: obs.exec.exitCode, signal: obs.exec.signal, stderrTail: stderrTail(obs.exec.stderr) };
  }
  const elapsedMs = performance.now() - started;
  const accepted = final?.result.accepted === true;
  let reason = final?.result.reason ?? 'no attempt ran';
  if (!accepted && exhausted)
    reason = `attempt budget exhausted: ${attempts.length} attempts allowed (1 + ${policy.attempts.corrections} corrections) and none accepted; last: ${reason}`;
  if (!accepted && timeUp) reason = `end-to-end budget of ${Math.round(limitMs / 1000)} s exhausted after ${attempts.length} attempts; last: ${reason}`;
  if (attempts.length > 1 && accepted) reason = `accepted on attempt ${attempts.length} of ${maxAttempts}: ${reason}`;
  return { accepted, reason, final, attempts, budget: { limitMs, elapsedMs, maxAttempts, exhausted: exhausted || timeUp } };
}

/** Names the input (never its content) and the seed that regenerates it; recorded as outside evidence. */
function onInputs(judged: PredicateResult, input: InputVariant, passed: readonly string[], total: number, seed: string | undefined): PredicateResult {
  const seedNote = `input seed ${seed ?? 'none'}`;
  const evidence = [
    ...(judged.evidence ?? []),
    outside(
      'hidden-inputs',
      `${seedNote}: ${total} inputs (1 visible, ${total - 1} generated); right on ${passed.length + (judged.accepted ? 1 : 0)}${judged.accepted ? '' : `, wrong on ${input.label}`}`,
      `input:${input.label}`,
    ),
  ];
  if (!judged.accepted) return { accepted: false, reason: `on the ${input.label} input (${seedNote}): ${judged.reason}`, evidence };
  // Not accepted until every input ran: if the budget ends the attempt here, this is its verdict.
  if (passed.length + 1 < total)
    return { accepted: false, reason: `right on ${passed.length + 1} of ${total} inputs; the others did not run (${seedNote})`, evidence };
  return { accepted: true, reason: `right on all ${total} inputs (1 visible, ${total - 1} generated, ${seedNote}): ${judged.reason}`, evidence };
}

export function artifactHashes(obs: Observation): Map<string, string> {
  return new Map(obs.artifacts.flatMap((a) => (a.content ? [[a.path, createHash('sha256').update(a.content).digest('hex')] as const] : [])));
}

/** Same artifacts (names and hashes) from two fresh runs of the same program? */
export function compareReplay(first: Observation, second: Observation): { reproducible: boolean; note: string } {
  const a = artifactHashes(first);
  const b = artifactHashes(second);
  const differing = [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k));
  return differing.length === 0
    ? { reproducible: true, note: `replayed in a fresh environment: ${a.size} artifact(s) byte-identical` }
    : { reproducible: false, note: `replayed in a fresh environment: ${differing.join(', ')} differ` };
}
