import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Backend, PolicyItem } from '../../model/backend-contract.js';
import { errorMessage } from '../../core/errors.js';
import type { Policy } from '../../model/policy.js';
import { newRunId } from '../../harness/run-context.js';
import * as files from './checks-files.js';
import * as exec from './checks-exec.js';
import * as life from './checks-lifecycle.js';
import { ADAPTER_CHECKS, fail, skip, type AdapterCheckReport, type CheckId, type CheckOutcome, type CheckResult } from './model.js';
import { CheckSession } from './session.js';
import { ADAPTER_API_VERSION } from '../../model/adapter-version.js';

export interface AdapterCheckOptions {
  policy: Policy;
  /** Where the adapter came from (a built-in name, a module path): printed in the report. */
  source?: string;
  /** Run only the blocking checks (what `sandcheck run` does before trusting an external adapter). */
  blockingOnly?: boolean;
  /** Run only these checks (preflight always runs). */
  only?: readonly CheckId[];
  onCheck?: (result: CheckResult) => void;
}

type CheckFn = (s: CheckSession) => CheckOutcome | Promise<CheckOutcome>;

function table(toleranceMs: number): Record<CheckId, CheckFn> {
  let timed: ReturnType<typeof exec.timeoutRun> | undefined;
  const timeoutRun = (s: CheckSession) => (timed ??= exec.timeoutRun(s));
  const unclaimedTimeout = (s: CheckSession): CheckOutcome | undefined =>
    s.claims('resources.wallSeconds')
      ? undefined
      : skip('the backend does not claim resources.wallSeconds: it has no timeout of its own to check (the harness keeps its own deadline)');
  return {
    'preflight.ok': () => skip('runs first'),
    'capabilities.consistent': life.capabilitiesConsistent,
    'create.fresh-workspace': life.freshWorkspace,
    'create.fresh-tmp': life.freshTmp,
    'files.binary-roundtrip': files.binaryRoundtrip,
    'files.empty': files.emptyFile,
    'files.nested': files.nested,
    'files.modes': files.modes,
    'files.read-only': files.readOnly,
    'files.missing': files.missing,
    'exec.exit-codes': exec.exitCodes,
    'exec.signal': exec.signal,
    'exec.argv': exec.argv,
    'exec.stdin': exec.stdin,
    'exec.env': exec.env,
    'exec.cwd': exec.cwd,
    'exec.large-output': exec.largeOutput,
    'exec.start-error': exec.startError,
    'exec.timeout': async (s) => unclaimedTimeout(s) ?? exec.judgeTimeout(await timeoutRun(s), toleranceMs),
    'exec.timeout-flag': async (s) => unclaimedTimeout(s) ?? exec.judgeTimeoutFlag(await timeoutRun(s)),
    'exec.abort': exec.abort,
    'exec.lab-netns': life.labNetns,
    'destroy.idempotent': life.destroyIdempotent,
    'destroy.leaves-nothing': life.destroyLeavesNothing,
  };
}

function blockingOf(blocking: boolean | PolicyItem, claimed: readonly PolicyItem[]): { blocking: boolean; blockingReason: string } {
  if (blocking === true) return { blocking: true, blockingReason: 'every adapter' };
  if (blocking === false) return { blocking: false, blockingReason: 'advisory' };
  return claimed.includes(blocking)
    ? { blocking: true, blockingReason: `the backend claims ${blocking}` }
    : { blocking: false, blockingReason: `advisory: the backend does not claim ${blocking}` };
}

/** Runs the adapter's own conformance checks, each in fresh environments, and says which blocking ones failed. */
export async function checkAdapter(backend: Backend, options: AdapterCheckOptions): Promise<AdapterCheckReport> {
  const startedAt = new Date();
  const scratchDir = await mkdtemp(join(tmpdir(), 'sandcheck-adapter-check-'));
  const session = new CheckSession(backend, options.policy, { runId: newRunId(), controllerEnv: {}, scratchDir });
  const fns = table(options.policy.resources.wallToleranceMs + 1000);
  const results: CheckResult[] = [];
  const record = (id: CheckId, outcome: CheckOutcome, durationMs: number, claimed: readonly PolicyItem[]): void => {
    const def = ADAPTER_CHECKS.find((c) => c.id === id);
    if (!def) return;
    const r: CheckResult = { id, title: def.title, ...blockingOf(def.blocking, claimed), ...outcome, durationMs: Math.round(durationMs) };
    results.push(r);
    options.onCheck?.(r);
  };
  let notes: string[] = [];
  let backendRun: { close(): Promise<{ items: string[] }> } | undefined;
  try {
    const t0 = performance.now();
    let preflightError: string | undefined;
    try {
      await backend.prepare?.(options.policy);
      await backend.preflight();
    } catch (err) {
      preflightError = `preflight() threw: ${errorMessage(err)}`;
    }
    // Run-wide machinery (e.g. a private Docker daemon) is set up as `sandcheck run` would, without a lab.
    if (preflightError === undefined && backend.openRun) {
      try {
        backendRun = await backend.openRun({ runId: session.ctx.runId });
      } catch (err) {
        preflightError = `openRun() threw: ${errorMessage(err)}`;
      }
    }
    record(
      'preflight.ok',
      preflightError === undefined ? { status: 'pass', detail: `preflight()${backend.openRun ? ' and openRun()' : ''} resolved` } : fail(preflightError),
      performance.now() - t0,
      [],
    );
    let claimed: readonly PolicyItem[] = [];
    try {
      claimed = backend.capabilities(options.policy).enforces;
    } catch {
      // capabilities.consistent reports it.
    }
    for (const def of ADAPTER_CHECKS) {
      if (def.id === 'preflight.ok') continue;
      if (options.only && !options.only.includes(def.id)) continue;
      if (options.blockingOnly && !blockingOf(def.blocking, claimed).blocking) continue;
      if (preflightError !== undefined) {
        record(def.id, skip(`not run: ${preflightError}`), 0, claimed);
        continue;
      }
      const t = performance.now();
      const attempt = async (): Promise<CheckOutcome> => {
        try {
          return await fns[def.id](session);
        } catch (err) {
          return fail(`the check could not complete: ${errorMessage(err)}`);
        }
      };
      let outcome = await attempt();
      // One repeat for a failed blocking check: a tool that sometimes fails to start (e.g. its bwrap losing a race
      // with a host mount that changed meanwhile) is not an adapter that mangles what it carries. The first failure stays on record.
      if (outcome.status === 'fail' && blockingOf(def.blocking, claimed).blocking) {
        const first = outcome.detail;
        const again = await attempt();
        outcome =
          again.status === 'pass'
            ? { ...again, firstAttempt: first }
            : { ...again, detail: `${again.detail} (failed when repeated too; first attempt: ${first})` };
      }
      record(def.id, outcome, performance.now() - t, claimed);
    }
  } finally {
    notes = await session.close();
    const left = await backendRun?.close().catch((err: unknown) => ({ items: [`openRun close threw: ${errorMessage(err)}`] }));
    notes.push(...(left?.items ?? []).map((l) => `backend teardown: ${l}`));
    await rm(scratchDir, { recursive: true, force: true });
  }
  const count = (st: CheckResult['status']): number => results.filter((r) => r.status === st).length;
  const partly = results.filter((r) => r.status === 'pass' && r.notApplicable !== undefined).map((r) => r.id);
  const repeated = results.filter((r) => r.status === 'pass' && r.firstAttempt !== undefined).map((r) => r.id);
  return {
    version: 1,
    adapterApiVersion: ADAPTER_API_VERSION,
    runId: session.ctx.runId,
    backend: { name: backend.name, description: backend.description, source: options.source ?? backend.name },
    policy: options.policy.name,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    checks: results,
    notes,
    summary: {
      passed: count('pass'),
      failed: count('fail'),
      skipped: count('skip'),
      blockingFailed: results.filter((r) => r.blocking && r.status === 'fail').map((r) => r.id),
      ...(partly.length > 0 ? { partlyNotApplicable: partly } : {}),
      ...(repeated.length > 0 ? { passedOnRepeat: repeated } : {}),
    },
  };
}
