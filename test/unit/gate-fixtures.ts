import type { Evidence } from '../../model/evidence.js';
import type { Policy } from '../../model/policy.js';
import type { SecurityResult, TaskResult } from '../../model/scorecard.js';
import type { RunEnvironment } from '../../model/environment.js';
import { canonicalJson, policySha256, sha256Hex } from '../../harness/environment-facts.js';
import { securityScorecard, taskScorecard, type BackendFacts } from '../../harness/scorecard-builder.js';
import type { GateRun } from '../../reports/gate.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

/** A security result with only what the gate and the waivers read filled in. */
export function secResult(
  id: string,
  verdict: SecurityResult['verdict'],
  opts: { evidence?: Evidence[]; policyItem?: string; reason?: string; severity?: SecurityResult['severity']; category?: SecurityResult['category'] } = {},
): SecurityResult {
  return {
    id,
    title: `title of ${id}`,
    category: opts.category ?? 'resources',
    policyItem: opts.policyItem ?? `item.${id}`,
    severity: opts.severity ?? 'high',
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

/** A --backend-config record as a run keeps it in the card: the file's name and hash, the applied options and their hash. */
export function backendConfigRecord(file: string, options: unknown): NonNullable<RunEnvironment['backendConfig']> {
  const text = canonicalJson(options);
  return { file, bytes: text.length, sha256: sha256Hex(`file ${file} ${text}`), options, optionsSha256: sha256Hex(text), checkedBy: 'sandcheck' };
}

export interface FabricatedRunOptions {
  backend?: string;
  enforces?: string[];
  /** The policy both cards carry (default: the unit tests' fast policy). */
  policy?: Policy;
  /** With it, both cards carry an `environment` recording this backend configuration. */
  backendConfig?: NonNullable<RunEnvironment['backendConfig']>;
}

/** Two fabricated cards of one run, as `sandcheck run` writes them (built by the real scorecard builder). */
export function fabricatedRun(dir: string, security: SecurityResult[], task: TaskResult[] = [], opts: FabricatedRunOptions = {}): GateRun {
  const facts: BackendFacts = { name: opts.backend ?? 'bwrap', description: 'fabricated', isolation: 'sandbox', enforces: opts.enforces ?? [] };
  const meta = { runId: `r-${dir}`, startedAt: new Date(0), finishedAt: new Date(0), interrupted: false };
  const policy = opts.policy ?? FAST_POLICY;
  const run = { dir, security: securityScorecard(facts, policy, meta, security), task: taskScorecard(facts, policy, meta, task) };
  if (opts.backendConfig === undefined) return run;
  const environment: RunEnvironment = {
    sandcheckVersion: '0.0.0',
    node: 'v20',
    kernel: 'k',
    cgroupMode: 'v2',
    policySha256: policySha256(policy),
    tools: [],
    backendConfig: opts.backendConfig,
  };
  return { dir, security: { ...run.security, environment }, task: { ...run.task, environment } };
}

/** The unit policy with some fields changed: `withPolicy({ resources: { wallSeconds: 10 } })`. */
export function withPolicy(change: { [K in keyof Policy]?: Partial<Policy[K]> }, base: Policy = FAST_POLICY): Policy {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(change)) {
    const current = (base as Record<string, unknown>)[k];
    out[k] = v !== null && typeof v === 'object' && !Array.isArray(v) && current !== null && typeof current === 'object' ? { ...current, ...v } : v;
  }
  return out as Policy;
}
