import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { PutFile } from '../../backends/contract.js';
import type { CaptureSummary } from '../model/observation.js';
import type { Policy } from '../model/policy.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../model/probe.js';

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

/** T_worst = (1 + N) × T_turn + T_queue_and_startup, in milliseconds. */
export function endToEndBudgetMs(policy: Policy): number {
  return (1 + policy.attempts.corrections) * policy.resources.wallSeconds * 1000 + policy.attempts.queueStartupSeconds * 1000;
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
  const why = decision.refusals.slice(0, 3).map((r) => `${r.path}: ${r.rule}`).join('; ');
  return { accepted: false, reason: `the predicate accepted it, but the exporter refused its artifacts (${why})`, evidence: result.evidence ?? [] };
}

/** generate → execute → observe → correct, bounded by the attempt count and the end-to-end budget. */
export async function runCorrectionLoop(task: TaskCase, ctx: ProbeContext, execute: ExecuteVariant): Promise<LoopOutcome> {
  const { policy } = ctx;
  const maxAttempts = 1 + policy.attempts.corrections;
  const candidates = task.attempts?.length ?? 1;
  const limitMs = endToEndBudgetMs(policy);
  const started = performance.now();
  const attempts: AttemptRecord[] = [];
  let feedback: Record<string, unknown> | undefined;
  let final: LoopOutcome['final'];
  let exhausted = false;
  let timeUp = false;
  for (let i = 0; i < candidates; i++) {
    if (i >= maxAttempts) {
      exhausted = true;
      break;
    }
    const remaining = limitMs - (performance.now() - started);
    if (remaining <= 0) {
      timeUp = true;
      break;
    }
    const variant = variantFor(task, i);
    const files = [...(task.files?.(ctx) ?? []), ...(feedback ? [{ path: 'feedback.json', content: Buffer.from(JSON.stringify(feedback)), readOnly: true }] : [])];
    const obs = await execute(variant, files, remaining);
    const result = exportGate(task.predicate(obs, ctx), obs);
    attempts.push({
      attempt: i + 1,
      verdict: result.accepted ? 'accepted' : 'rejected',
      reason: result.reason,
      exitCode: obs.exec.exitCode,
      signal: obs.exec.signal,
      wallMs: obs.exec.wallMs,
    });
    final = { obs, result, variant, files };
    if (result.accepted) break;
    feedback = { attempt: i + 1, accepted: false, exitCode: obs.exec.exitCode, signal: obs.exec.signal, stderrTail: stderrTail(obs.exec.stderr) };
  }
  const elapsedMs = performance.now() - started;
  const accepted = final?.result.accepted === true;
  let reason = final?.result.reason ?? 'no attempt ran';
  if (!accepted && exhausted) reason = `attempt budget exhausted: ${attempts.length} attempts allowed (1 + ${policy.attempts.corrections} corrections) and none accepted; last: ${reason}`;
  if (!accepted && timeUp) reason = `end-to-end budget of ${Math.round(limitMs / 1000)} s exhausted after ${attempts.length} attempts; last: ${reason}`;
  if (attempts.length > 1 && accepted) reason = `accepted on attempt ${attempts.length} of ${maxAttempts}: ${reason}`;
  return { accepted, reason, final, attempts, budget: { limitMs, elapsedMs, maxAttempts, exhausted: exhausted || timeUp } };
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
