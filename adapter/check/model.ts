import { z } from 'zod';
import type { PolicyItem } from '../../model/backend-contract.js';

/**
 * The adapter's own conformance checks. `blocking` is `true` (the harness cannot trust any verdict
 * without it), `false` (advisory) or a policy item: blocking when the backend claims that item.
 */
export const ADAPTER_CHECKS = [
  { id: 'preflight.ok', title: 'preflight() resolves on this machine', blocking: true },
  { id: 'capabilities.consistent', title: 'capabilities() names known policy items, no item both claimed and disclaimed, same answer twice', blocking: true },
  { id: 'create.fresh-workspace', title: 'a file written in one environment is not seen in the next', blocking: true },
  { id: 'create.fresh-tmp', title: 'a file written in /tmp in one environment is not seen in the next', blocking: 'lifecycle.freshEnvironment' },
  { id: 'files.binary-roundtrip', title: 'putFiles/getFiles keep every byte value; the program reads the same bytes', blocking: true },
  { id: 'files.empty', title: 'an empty file goes in and comes out empty', blocking: true },
  { id: 'files.nested', title: 'nested paths in, nested paths written by the program out', blocking: true },
  { id: 'files.modes', title: 'PutFile.mode reaches the program (0755 executable, 0600)', blocking: false },
  { id: 'files.read-only', title: 'readOnly inputs cannot be changed by the program (write, chmod, unlink, rename)', blocking: 'files.readOnlyInput' },
  { id: 'files.missing', title: 'getFiles reports a path that does not exist as missing, without throwing', blocking: true },
  { id: 'exec.exit-codes', title: 'exit codes 0, 3 and 255 come back as they are', blocking: true },
  { id: 'exec.signal', title: 'a program that kills itself with SIGTERM is reported as signalled (SIGTERM or 143)', blocking: true },
  { id: 'exec.argv', title: 'argv elements arrive unchanged (spaces, quotes, $VARS, empty): no shell', blocking: true },
  { id: 'exec.stdin', title: 'stdin bytes arrive exactly; without stdin the program reads EOF', blocking: true },
  { id: 'exec.env', title: 'ExecRequest.env reaches the program', blocking: true },
  { id: 'exec.cwd', title: 'the default cwd is the workspace; ExecRequest.cwd is relative to it', blocking: true },
  { id: 'exec.large-output', title: '8 MiB on stdout and 1 MiB on stderr are delivered and counted exactly', blocking: true },
  { id: 'exec.start-error', title: 'a missing program is a result (exit 126/127 or startError), not an exception', blocking: false },
  { id: 'exec.timeout', title: "the backend's own timeout stops the program near timeoutMs", blocking: 'resources.wallSeconds' },
  { id: 'exec.timeout-flag', title: 'a program stopped by the backend timeout is reported timedOut: true', blocking: false },
  { id: 'exec.abort', title: 'an abort stops the program and exec() returns within 5 s', blocking: true },
  { id: 'exec.lab-netns', title: "with a lab handle, no box process is in the host's network namespace (read from the host's /proc)", blocking: true },
  { id: 'destroy.idempotent', title: 'destroy() twice (and concurrently) resolves; the second reports nothing new', blocking: true },
  { id: 'destroy.leaves-nothing', title: 'destroy() leaves no process that the environment started (daemon with setsid)', blocking: true },
] as const satisfies readonly { id: string; title: string; blocking: boolean | PolicyItem }[];

export type CheckId = (typeof ADAPTER_CHECKS)[number]['id'];
export const CHECK_IDS = ADAPTER_CHECKS.map((c) => c.id) as [CheckId, ...CheckId[]];

export const CheckResultSchema = z.strictObject({
  id: z.enum(CHECK_IDS),
  title: z.string(),
  blocking: z.boolean(),
  /** Why the check is (not) blocking here, e.g. "the backend claims files.readOnlyInput". */
  blockingReason: z.string(),
  status: z.enum(['pass', 'fail', 'skip']),
  /** What was observed, from outside unless it says otherwise. */
  detail: z.string(),
  /** A part of the check that does not apply to this backend, and why (e.g. the writing half, for a box that writes no results): never counted as passed. */
  notApplicable: z.string().optional(),
  /**
   * A blocking check that failed once and passed when repeated (each attempt in fresh environments): what the
   * first attempt saw, e.g. a tool that sometimes fails to start. Shown next to the pass, never dropped.
   */
  firstAttempt: z.string().optional(),
  durationMs: z.number().nonnegative(),
});
export type CheckResult = z.infer<typeof CheckResultSchema>;

export const AdapterCheckReportSchema = z
  .strictObject({
    version: z.literal(1),
    adapterApiVersion: z.string(),
    /** The check's run id: every program it starts carries `sandcheck-check-<runId>-` on its command line. */
    runId: z.string(),
    backend: z.strictObject({ name: z.string(), description: z.string(), source: z.string() }),
    policy: z.string(),
    startedAt: z.iso.datetime(),
    finishedAt: z.iso.datetime(),
    checks: z.array(CheckResultSchema),
    /** What the check cleaned up after the adapter (environments a failed check left, processes it killed). */
    notes: z.array(z.string()),
    summary: z.strictObject({
      passed: z.number().int().nonnegative(),
      failed: z.number().int().nonnegative(),
      skipped: z.number().int().nonnegative(),
      /** Ids of the failed blocking checks: `sandcheck run` refuses an external adapter while this is not empty. */
      blockingFailed: z.array(z.enum(CHECK_IDS)),
      /** Ids of the passed checks that passed only in part, the rest not applicable (see each check's notApplicable). */
      partlyNotApplicable: z.array(z.enum(CHECK_IDS)).optional(),
      /** Ids of the blocking checks that passed only on their one repeat (see each check's firstAttempt). */
      passedOnRepeat: z.array(z.enum(CHECK_IDS)).optional(),
    }),
  })
  .meta({ id: 'sandcheck-adapter-check', title: 'sandcheck adapter check report' });
export type AdapterCheckReport = z.infer<typeof AdapterCheckReportSchema>;

/** What one check found. */
export interface CheckOutcome {
  status: 'pass' | 'fail' | 'skip';
  detail: string;
  notApplicable?: string;
  firstAttempt?: string;
}

export const pass = (detail: string): CheckOutcome => ({ status: 'pass', detail });
export const fail = (detail: string): CheckOutcome => ({ status: 'fail', detail });
/** The part that could be checked passed; the rest does not apply here, for `why`. */
export const passInPart = (detail: string, why: string): CheckOutcome => ({ status: 'pass', detail, notApplicable: why });
export const skip = (detail: string): CheckOutcome => ({ status: 'skip', detail });
