import type { Backend } from '../model/backend-contract.js';
import type { Policy } from '../model/policy.js';
import { SCORECARD_VERSION, type SecurityResult, type SecurityScorecard, type TaskResult, type TaskScorecard, type WatchedDaemon } from '../model/scorecard.js';
import { packageVersion } from '../core/paths.js';
import type { RunEnvironment } from '../model/environment.js';
import type { Shard } from './shard.js';

export interface RunMeta {
  runId: string;
  startedAt: Date;
  finishedAt: Date;
  interrupted: boolean;
  /** The run did not finish (killed, interrupted, internal error): some results are missing. */
  incomplete?: boolean;
  /** The exporter the export probes judged. */
  exporter?: string;
  /** Who judged the network probes, or why none did. */
  network?: string;
  /** This run is slice index/total of a selection (--shard). */
  shard?: Shard;
  /** The daemons whose event logs were read (--watch-daemon). */
  watchedDaemons?: WatchedDaemon[];
  /** --trust-claims: unclaimed required items were not run (unenforced on the claim's word). */
  trustClaims?: boolean;
  /** Tool versions, kernel, cgroup mode, policy hash, backend configuration (environment-facts collectEnvironment). */
  environment?: RunEnvironment;
}

/** What a scorecard says about its backend, before cold-start figures are added. */
export type BackendFacts = Omit<SecurityScorecard['backend'], 'coldStartMs'>;

/** Either a live backend (asked for its capabilities under the policy) or facts recorded earlier (recovery). */
export type BackendSource = Backend | BackendFacts;

function runInfo(meta: RunMeta): SecurityScorecard['run'] {
  return {
    id: meta.runId,
    startedAt: meta.startedAt.toISOString(),
    finishedAt: meta.finishedAt.toISOString(),
    interrupted: meta.interrupted,
    incomplete: meta.incomplete ?? meta.interrupted,
    sandcheckVersion: packageVersion(),
    ...(meta.shard !== undefined ? { shard: meta.shard } : {}),
    exporter: meta.exporter ?? 'unknown',
    ...(meta.trustClaims === true ? { trustClaims: true } : {}),
    ...(meta.network !== undefined ? { network: meta.network } : {}),
    ...(meta.watchedDaemons !== undefined && meta.watchedDaemons.length > 0 ? { watchedDaemons: meta.watchedDaemons } : {}),
    // resourceUsage().maxRSS is in kilobytes.
    harness: { maxRssBytes: process.resourceUsage().maxRSS * 1024 },
  };
}

export function backendFacts(backend: Backend, policy: Policy): BackendFacts {
  const caps = backend.capabilities(policy);
  return { name: backend.name, description: backend.description, isolation: caps.isolation, enforces: [...caps.enforces] };
}

function isBackend(b: BackendSource): b is Backend {
  return typeof (b as Backend).capabilities === 'function';
}

function backendInfo(backend: BackendSource, policy: Policy, startups: number[]): SecurityScorecard['backend'] {
  const facts = isBackend(backend) ? backendFacts(backend, policy) : backend;
  const sorted = [...startups].sort((a, b) => a - b);
  const coldStartMs = sorted.length
    ? { samples: sorted.length, median: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0), max: Math.round(sorted[sorted.length - 1] ?? 0) }
    : null;
  return { ...facts, enforces: [...facts.enforces], coldStartMs };
}

const startupsOf = (results: { observation?: { startupMs?: number | undefined } | undefined }[]): number[] =>
  results.flatMap((r) => (r.observation?.startupMs !== undefined ? [r.observation.startupMs] : []));

export function securityScorecard(backend: BackendSource, policy: Policy, meta: RunMeta, results: SecurityResult[]): SecurityScorecard {
  const count = (v: SecurityResult['verdict']) => results.filter((r) => r.verdict === v).length;
  return {
    scorecard: 'security',
    version: SCORECARD_VERSION,
    run: runInfo(meta),
    backend: backendInfo(backend, policy, startupsOf(results)),
    policy,
    summary: {
      total: results.length,
      held: count('held'),
      crossed: count('crossed'),
      unenforced: count('unenforced'),
      inconclusive: count('inconclusive'),
      notApplicable: count('not-applicable'),
      waived: results.filter((r) => r.waiver !== undefined).length,
    },
    ...(meta.environment ? { environment: meta.environment } : {}),
    results,
  };
}

export function taskScorecard(backend: BackendSource, policy: Policy, meta: RunMeta, results: TaskResult[]): TaskScorecard {
  const count = (o: TaskResult['outcome']) => results.filter((r) => r.outcome === o).length;
  return {
    scorecard: 'task',
    version: SCORECARD_VERSION,
    run: runInfo(meta),
    backend: backendInfo(backend, policy, startupsOf(results)),
    policy,
    summary: {
      total: results.length,
      asExpected: count('as-expected'),
      unexpected: count('unexpected'),
      error: count('error'),
      notApplicable: count('not-applicable'),
      nonReproducible: results.filter((r) => r.reproducible === false).length,
    },
    ...(meta.environment ? { environment: meta.environment } : {}),
    results,
  };
}

/** 0 all as expected; 1 an unwaived crossing, an unenforced required item or a wrong task verdict; 2 only inconclusive results or harness errors. */
export function exitCodeFor(security: SecurityScorecard, task: TaskScorecard): 0 | 1 | 2 {
  // A crossing a live waiver accepts (--waivers) is reported, not counted.
  const failing = security.summary.crossed + security.summary.unenforced - (security.summary.waived ?? 0);
  if (failing > 0 || task.summary.unexpected > 0) return 1;
  if (security.summary.inconclusive > 0 || task.summary.error > 0) return 2;
  return 0;
}
