import type { AnyResult } from '../model/events.js';
import type { Policy } from '../model/policy.js';
import type { ProbeSpec, TaskCase } from '../model/probe.js';
import type { TaskResult } from '../model/scorecard.js';
import { endToEndBudgetMs } from './task/correction-loop.js';

/** Results for probes that never ran because the run was interrupted (or ended) before they started. */
export function notRunResults(probes: readonly ProbeSpec[], policy: Policy, error: { code: string; message: string }): AnyResult[] {
  const reason = `harness error (${error.code}): ${error.message}`;
  return probes.map((p): AnyResult =>
    p.kind === 'security'
      ? {
          kind: 'security',
          id: p.id,
          title: p.title,
          category: p.category,
          policyItem: p.policyItem,
          severity: p.severity,
          verdict: 'inconclusive',
          reason,
          remediation: p.remediation,
          evidence: [],
          durationMs: 0,
          harnessError: error,
        }
      : { ...taskNotRun(p, policy), outcome: 'error', reason, harnessError: error },
  );
}

/** The fields of a task result whose case got no verdict (not run, or the harness failed): the caller adds outcome and reason. */
export function taskNotRun(task: TaskCase, policy: Policy, elapsedMs = 0): { kind: 'task' } & Omit<TaskResult, 'outcome' | 'reason'> {
  return {
    ...taskIdentity(task),
    verdict: null,
    evidence: [],
    artifacts: [],
    attempts: [],
    budget: { limitMs: endToEndBudgetMs(policy), elapsedMs, maxAttempts: 1 + policy.attempts.corrections, exhausted: false },
    reproducible: null,
    durationMs: elapsedMs,
  };
}

/** What names a task case in its result. */
export function taskIdentity(task: TaskCase): { kind: 'task' } & Pick<TaskResult, 'id' | 'title' | 'policyItem' | 'expected'> {
  return { kind: 'task', id: task.id, title: task.title, policyItem: task.policyItem, expected: task.expected };
}
