import type { Capabilities } from '../../model/backend-contract.js';
import type { AnyResult } from '../../model/events.js';
import type { Policy } from '../../model/policy.js';
import type { ProbeContext, TaskCase } from '../../model/probe.js';
import { taskNotRun } from '../not-run.js';

/** The files a task case judges, as written by its program (empty: it judges stdout and the exit status only). */
export function writtenResultsOf(task: TaskCase, ctx: ProbeContext): readonly string[] {
  return typeof task.artifacts === 'function' ? task.artifacts(ctx) : (task.artifacts ?? []);
}

/**
 * Why a task case cannot be judged on this backend, or undefined: it needs files its program writes and the
 * backend declares that its box writes none (a read-only sandbox). Such a case is not run: a rejection there
 * would say nothing about the program, an acceptance is impossible.
 */
export function noResultsReason(task: TaskCase, caps: Capabilities, ctx: ProbeContext): string | undefined {
  if (caps.noWrittenResults === undefined) return undefined;
  const wanted = writtenResultsOf(task, ctx);
  if (wanted.length === 0) return undefined;
  const named = wanted.length > 3 ? `${wanted.slice(0, 3).join(', ')} and ${wanted.length - 3} more` : wanted.join(', ');
  return `not run: the case judges files its program writes (${named}), and the backend declares that its box writes no results: ${caps.noWrittenResults}`;
}

/** A task case that was not run for `reason`: outcome not-applicable, no verdict, never counted as expected. */
export function notApplicableTask(task: TaskCase, policy: Policy, reason: string): AnyResult {
  return { ...taskNotRun(task, policy), outcome: 'not-applicable', reason };
}
