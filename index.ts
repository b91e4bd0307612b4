/**
 * sandcheck's programmatic API: `import { runSuite, securitySuite, taskSuite, POLICY_PRESETS } from 'sandcheck'`.
 * The CLI is a thin shell over these; see examples/vitest-embed/ for a suite embedded in a test run.
 */
import { runSuite as runSuiteWith, type RunSuiteOptions as EngineOptions, type RunSuiteOutcome } from './harness/run-suite.js';
import { writeScorecards } from './reports/write-cards.js';

export type { RunSuiteOutcome };
/** As the engine takes them, the report writer optional (JSON, JUnit and SARIF by default). */
export type RunSuiteOptions = Omit<EngineOptions, 'writeCards'> & Partial<Pick<EngineOptions, 'writeCards'>>;

/** Runs the probes against the backend and writes both cards into `outDir`. */
export function runSuite(options: RunSuiteOptions): Promise<RunSuiteOutcome> {
  return runSuiteWith({ writeCards: writeScorecards, ...options });
}
export { securitySuite, taskSuite, allProbes, selectProbes } from './suites/index.js';
export { POLICY_PRESETS, REFERENCE_POLICY, CI_POLICY, PolicySchema, type Policy, type PresetName } from './model/policy.js';
export { loadPolicy } from './harness/policy-loader.js';
export { loadTaskDir } from './harness/task/load-tasks.js';
export { loadBackend, backendNames, isBuiltinBackend } from './backends/registry.js';
export { checkAdapter, type AdapterCheckOptions } from './adapter/check/run-checks.js';
export type { AdapterCheckReport, CheckResult } from './adapter/check/model.js';
export { SandcheckError, EXIT, type SandcheckErrorCode } from './core/errors.js';
export type { RunReporter, AnyResult } from './model/events.js';
export type { ProbeSpec, SecurityProbe, TaskCase } from './model/probe.js';
export type { SecurityScorecard, TaskScorecard, SecurityResult, TaskResult } from './model/scorecard.js';
export { ADAPTER_API_VERSION } from './model/adapter-version.js';
export type { Backend } from './model/backend-contract.js';
