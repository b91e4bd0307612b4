import type { AnyResult } from './events.js';
import type { Policy } from './model/policy.js';
import type { ProbeSpec } from './model/probe.js';
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
      : {
          kind: 'task',
          id: p.id,
          title: p.title,
          policyItem: p.policyItem,
          expected: p.expected,
          verdict: null,
          outcome: 'error',
          reason,
          evidence: [],
          artifacts: [],
          attempts: [],
          budget: { limitMs: endToEndBudgetMs(policy), elapsedMs: 0, maxAttempts: 1 + policy.attempts.corrections, exhausted: false },
          reproducible: null,
          durationMs: 0,
          harnessError: error,
        },
  );
}
