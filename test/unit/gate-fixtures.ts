import type { Evidence } from '../../model/evidence.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import { securityScorecard, taskScorecard, type BackendFacts } from '../../harness/scorecard-builder.js';
import type { GateRun } from '../../reports/gate.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

/** A security result with only what the gate and the waivers read filled in. */
export function secResult(
  id: string,
  verdict: SecurityResult['verdict'],
  opts: { evidence?: Evidence[]; policyItem?: string; reason?: string } = {},
): SecurityResult {
  return {
    id,
    title: `title of ${id}`,
    category: 'resources',
    policyItem: opts.policyItem ?? `item.${id}`,
    severity: 'high',
    verdict,
    reason: opts.reason ?? `${id} came out ${verdict}`,
    remediation: 'fix it',
    evidence: opts.evidence ?? [{ source: 'outside', witness: 'cgroup', where: 'cgroup v2: sandcheck-r1234abcd', detail: `${id}: pids peak 64 of 64` }],
    durationMs: 1,
  };
}

export function taskResult(id: string, outcome: TaskResult['outcome']): TaskResult {
  return {
    id,
    title: `task ${id}`,
    policyItem: 'task',
    expected: 'accept',
    verdict: outcome === 'error' ? null : outcome === 'as-expected' ? 'accepted' : 'rejected',
    outcome,
    reason: `${id} was ${outcome}`,
    evidence: [],
    artifacts: [],
    attempts: [],
    budget: { limitMs: 1, elapsedMs: 1, maxAttempts: 1, exhausted: false },
    reproducible: null,
    durationMs: 1,
  };
}

/** Two fabricated cards of one run, as `sandcheck run` writes them (built by the real scorecard builder). */
export function fabricatedRun(dir: string, security: SecurityResult[], task: TaskResult[] = [], opts: { backend?: string; enforces?: string[] } = {}): GateRun {
  const facts: BackendFacts = { name: opts.backend ?? 'bwrap', description: 'fabricated', isolation: 'sandbox', enforces: opts.enforces ?? [] };
  const meta = { runId: `r-${dir}`, startedAt: new Date(0), finishedAt: new Date(0), interrupted: false };
  return { dir, security: securityScorecard(facts, FAST_POLICY, meta, security), task: taskScorecard(facts, FAST_POLICY, meta, task) };
}
