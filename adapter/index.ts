/**
 * sandcheck's public adapter API: `import type { Backend } from 'sandcheck/adapter'`.
 *
 * The contract is defined once, in model/backend-contract.ts, and re-exported here together with the
 * helpers the built-in backends use to stay honest (host-side process discovery, cgroup counters read
 * from outside, bounded capture, idempotent teardown). Reference: docs/adapters.md.
 */

export { ADAPTER_API_VERSION } from '../model/adapter-version.js';

export {
  POLICY_ITEMS,
  type Backend,
  type BackendContext,
  type BackendFactory,
  type ByteSink,
  type Capabilities,
  type Environment,
  type ExecRequest,
  type ExecResult,
  type FileKind,
  type GotFile,
  type LabHandle,
  type Leftovers,
  type PolicyItem,
  type PutFile,
  type ResourceReport,
} from '../model/backend-contract.js';
export type { Policy } from '../model/policy.js';
export type { Tristate } from '../model/observation.js';
export { SandcheckError, type SandcheckErrorCode } from '../core/errors.js';

/** What a module adapter's default export is: `--backend ./my-adapter.mjs` calls it with the parsed `--backend-config`. */
export type AdapterFactory = (options: unknown) => import('../model/backend-contract.js').Backend | Promise<import('../model/backend-contract.js').Backend>;

// Host processes, seen from outside the box.
export { findProcessesWithEnvMarker, findProcessesWithCmdline, killPids, type MarkedProcess } from '../lab/process-scan.js';
export { processTree, readStat, parseStat, sameProcessAlive, commOf, type ProcStat } from '../backends/shared/host-proc.js';
export { killGroup, killTree, killQuietly, killMarkedProcesses, type KilledProcess } from '../backends/shared/process-kill.js';

// cgroup counters, read from the host's cgroupfs.
export { readV1Counters, readV2Counters, observedOnly, type CgroupCounters } from '../lab/cgroup-counters.js';
export { readNumber, parseKeyed, readPids, cgroupMounts } from '../core/cgroup-files.js';

// Output, files and teardown.
export { BoundedCapture, type BoundedCaptureOptions } from '../lab/bounded-capture.js';
export { describeEntry, statEntry, kindOf } from '../backends/file-entry.js';
export { segmentsOf } from '../backends/shared/workspace-path.js';
export { TeardownOnce, stopRunningExec, type RunningExec } from '../backends/shared/teardown.js';

// The adapter's own conformance checks (`sandcheck adapter check`), for use from a test runner.
export { checkAdapter, type AdapterCheckOptions } from './check/run-checks.js';
export { ADAPTER_CHECKS, type AdapterCheckReport, type CheckResult, type CheckId } from './check/model.js';
