import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Environment, ExecResult, PutFile, ResourceReport } from '../model/backend-contract.js';
import { BoundedCapture } from '../lab/bounded-capture.js';
import type { CompiledCanaries } from '../lab/canary-forms.js';
import { scanJoined, scanSplitAcross } from '../lab/canary-scan.js';
import { startHostHealth } from '../lab/host-health.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import { startProcessSampler, type HostCgroupRead } from './host-observers.js';
import { programMark } from '../lab/kernel-carriers.js';
import { hitWhere } from '../lab/left-in-box.js';
import type { ExecObservation, KilledBy } from '../model/observation.js';
import type { Policy } from '../model/policy.js';
import type { ProbeContext, ProbeSpec } from '../model/probe.js';
import { payloadPath } from '../core/paths.js';
import { CHALLENGE_FILE, CONTROL_ENV, CONTROL_FILE, makeControlValue, makeProof, type ExecProof } from '../lab/proof.js';
import type { RunContext } from './run-context.js';
import type { ExecTracker } from './exec-tracker.js';

export const DEFAULT_GRACE_MS = 2000;
/** How long a backend may take to stop after the harness aborted an exec before it counts as a harness error. */
const BACKEND_STOP_TIMEOUT_MS = 15_000;

/** The harness's own deadline: the policy's wall clock plus a grace. */
export function harnessDeadlineMs(policy: Policy, graceMs = DEFAULT_GRACE_MS): number {
  return policy.resources.wallSeconds * 1000 + graceMs;
}

/** Past this many bytes of stdout+stderr the harness stops reading: the crossing is proven by then. */
export function outputCeilingBytes(policy: Policy): number {
  return policy.output.maxBytes * 4 + 1024 * 1024;
}

export interface PreparedFiles {
  files: PutFile[];
  proof: ExecProof;
  /** The in-box positive control's value and where it was put. */
  control?: { where: 'file' | 'env'; value: string };
}

/** The payload, its helper, a fresh challenge (and positive control) for one execution, and the probe's own files. */
export async function payloadFiles(probe: ProbeSpec, ctx: ProbeContext, files?: PutFile[]): Promise<PreparedFiles> {
  let payload: Buffer;
  try {
    payload = probe.source !== undefined ? Buffer.from(probe.source) : await readFile(payloadPath(probe.payload, probe.payloadFile));
  } catch (err) {
    throw new SandcheckError('PAYLOAD_MISSING', `payload for ${probe.id} not found (${errorMessage(err)})`);
  }
  const helper = await readFile(payloadPath('_shared', 'sandcheck_payload.py'));
  const proof = makeProof(payload, helper);
  const control = probe.positiveControl ? { where: probe.positiveControl, value: makeControlValue() } : undefined;
  return {
    proof,
    ...(control ? { control } : {}),
    files: [
      { path: 'payload.py', content: payload, readOnly: true },
      { path: 'sandcheck_payload.py', content: helper, readOnly: true },
      { path: CHALLENGE_FILE, content: Buffer.from(`${proof.challenge}\n`), readOnly: true },
      ...(control?.where === 'file' ? [{ path: CONTROL_FILE, content: Buffer.from(`${control.value}\n`), readOnly: true }] : []),
      ...(files ?? probe.files?.(ctx) ?? []),
    ],
  };
}

export interface ExecHow {
  extraArgs: Record<string, unknown>;
  /** Replaces the probe's own files (the correction loop adds feedback.json). */
  files?: PutFile[];
  /** The controller's remaining end-to-end budget, when it is shorter than the per-exec deadline. */
  deadlineCapMs?: number;
  /** The host's own record of this execution's processes (harness/exec-tracker.ts), checked against what the adapter names. */
  tracker?: ExecTracker;
}

export interface ExecOutcome {
  observation: ExecObservation;
  attempted: boolean;
  finished: boolean;
  positiveControl?: { where: 'file' | 'env'; seen: boolean };
  canaryHits: { label: string; where: string }[];
}

/** What one execution needs from its run: the policy, the harness's grace, the canaries to look for, the interrupt. */
export interface ExecSetting {
  policy: Policy;
  graceMs: number;
  canaries: CompiledCanaries;
  canaryList: RunContext['canaries']['all'];
  scratchDir: string;
  signal?: AbortSignal;
  /** The backend's counters are an outside adapter's claim (backends/own-counters.ts): the host reads the box's cgroups itself. */
  adapterCounters?: boolean;
}

/**
 * One execution of a probe's payload under the harness's own deadline and output ceiling, with both streams
 * captured (bounded) and scanned for every form of every canary; host observers run alongside when the probe asks.
 */
export async function execWithDeadline(
  setting: ExecSetting,
  env: Environment,
  probe: ProbeSpec,
  ctx: ProbeContext,
  how: ExecHow,
  createdAt: number,
  prepared: PreparedFiles,
): Promise<ExecOutcome> {
  const { policy, canaries } = setting;
  const start = prepared.proof.attemptLine;
  const done = prepared.proof.doneLine;
  const control = prepared.control;
  const needles = [start, done, ...(control ? [control.value] : [])];
  let firstByteAt: number | undefined;
  const stdout = new BoundedCapture({ needles, canaries, onFirstByte: () => (firstByteAt ??= performance.now()) });
  const stderr = new BoundedCapture({ needles, canaries });
  const abort = new AbortController();
  let killedBy: KilledBy = 'none';
  const kill = (why: KilledBy): void => {
    if (abort.signal.aborted) return;
    killedBy = why;
    abort.abort();
  };
  const ceiling = outputCeilingBytes(policy);
  const sink = (cap: BoundedCapture) => ({
    write: (chunk: Uint8Array) => {
      cap.write(chunk);
      if (stdout.bytes + stderr.bytes > ceiling) kill('harness-output-ceiling');
    },
  });
  const deadlineMs = Math.min(harnessDeadlineMs(policy, setting.graceMs), how.deadlineCapMs ?? Number.POSITIVE_INFINITY);
  const timer = setTimeout(() => kill('harness-deadline'), deadlineMs);
  const onInterrupt = (): void => kill('harness-interrupt');
  setting.signal?.addEventListener('abort', onInterrupt, { once: true });
  if (setting.signal?.aborted) onInterrupt();
  // An outside adapter's box whose host pids the harness can see: its cgroups are read by the host, the payload
  // holding still (at most 2 s) until the host has placed this execution's program in them.
  const ownCgroupRead = probe.readsCgroup === true && setting.adapterCounters === true && env.hostPids !== undefined;
  const args = { nonce: ctx.nonce, probe: probe.id, ...(probe.args?.(ctx) ?? {}), ...how.extraArgs, ...(ownCgroupRead ? { holdUntilSeen: 2 } : {}) };
  const program =
    probe.sampleProgram ??
    (probe.interpreter ? new RegExp(`^${(probe.interpreter.split('/').pop() ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) : undefined);
  const sampler =
    (probe.sampleProcesses === true || ownCgroupRead) && env.hostPids
      ? startProcessSampler(env, {
          ...(ownCgroupRead ? { cgroup: true, release: ctx.nonce } : {}),
          ...(probe.kernelCarriers ? { nonce: ctx.nonce, ...(probe.kernelCarriers === 'marked-program' ? { mark: programMark(ctx.nonce) } : {}) } : {}),
          ...(program ? { program } : {}),
          ...(probe.rootPaths ? { rootPaths: probe.rootPaths } : {}),
          ...(probe.releaseWhenSeen === 'sampled' ? { release: ctx.nonce } : {}),
          ...(how.tracker ? { tracker: how.tracker } : {}),
        })
      : undefined;
  const health = probe.watchHost ? await startHostHealth(setting.scratchDir) : undefined;
  const t0 = performance.now();
  let result: ExecResult;
  try {
    result = await Promise.race([
      env.exec({
        argv: [probe.interpreter ?? 'python3', 'payload.py', JSON.stringify(args)],
        ...(probe.stdin ? { stdin: probe.stdin(ctx) } : {}),
        ...(control?.where === 'env' ? { env: { [CONTROL_ENV]: control.value } } : {}),
        timeoutMs: policy.resources.wallSeconds * 1000,
        maxOutputBytes: policy.output.maxBytes,
        stdout: sink(stdout),
        stderr: sink(stderr),
        signal: abort.signal,
      }),
      backendStopWatch(abort.signal),
    ]);
  } finally {
    clearTimeout(timer);
    setting.signal?.removeEventListener('abort', onInterrupt);
  }
  const wallMs = performance.now() - t0;
  const hostProcesses = sampler ? await sampler.stop() : undefined;
  const hostHealth = health ? await health.stop() : undefined;
  const resources = setting.adapterCounters ? hostCgroupReport(hostProcesses?.cgroup) : result.resources;
  // Every form (encoded, reversed, split over lines or across the two channels) in every byte of both streams.
  const canaryHits = [
    ...stdout.canaryHits().map((h) => ({ label: h.label, where: hitWhere('stdout', h) })),
    ...stderr.canaryHits().map((h) => ({ label: h.label, where: hitWhere('stderr', h) })),
    ...scanJoined([...stdout.keptParts(), ...stderr.keptParts()], canaries).map((h) => ({ label: h.label, where: hitWhere('stdout+stderr joined', h) })),
    ...scanSplitAcross([Buffer.concat(stdout.keptParts()), Buffer.concat(stderr.keptParts())], setting.canaryList).map((h) => ({
      label: h.label,
      where: 'stdout+stderr joined (split across the channels)',
    })),
  ];
  const observation: ExecObservation = {
    exitCode: result.exitCode,
    signal: result.signal,
    wallMs,
    ...(firstByteAt !== undefined ? { startupMs: firstByteAt - createdAt, firstOutputMs: Math.max(0, firstByteAt - t0) } : {}),
    harnessDeadlineMs: deadlineMs,
    killedBy,
    ...(result.startError ? { startError: result.startError } : {}),
    backendReport: { timedOut: result.timedOut, oomKilled: result.oomKilled, outputTruncated: result.outputTruncated },
    stdout: stdout.summary(),
    stderr: stderr.summary(),
    ...(resources ? { resources } : {}),
    ...(setting.adapterCounters && result.resources ? { adapterResources: result.resources } : {}),
    ...(hostProcesses ? { hostProcesses: hostProcesses.processes, hostProcessCountMax: hostProcesses.maxConcurrent } : {}),
    ...(hostProcesses?.userSpaceKernel ? { userSpaceKernel: hostProcesses.userSpaceKernel } : {}),
    ...(hostProcesses?.unnamed ? { unnamedProcesses: hostProcesses.unnamed } : {}),
    ...(hostProcesses?.unlinkedNamed ? { unlinkedNamedPids: hostProcesses.unlinkedNamed } : {}),
    ...(hostHealth ? { hostHealth } : {}),
  };
  return {
    observation,
    attempted: stdout.has(start) || stderr.has(start),
    finished: stdout.has(done) || stderr.has(done),
    ...(control ? { positiveControl: { where: control.where, seen: stdout.has(control.value) || stderr.has(control.value) } } : {}),
    canaryHits,
  };
}

/** The host's own read of the box program's cgroups as the counters judges use; undefined when it could read none. */
function hostCgroupReport(read: HostCgroupRead | undefined): ResourceReport | undefined {
  if (!read || Object.keys(read.counters).length === 0) return undefined;
  return { source: `host: the cgroups of the box's program (pid ${read.pid}: ${read.where}), read by sandcheck`, ...read.counters };
}

/** Resolves never; rejects if a backend keeps running long after the harness told it to stop. */
function backendStopWatch(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener(
      'abort',
      () => {
        setTimeout(
          () => reject(new SandcheckError('HARNESS', `backend did not stop within ${BACKEND_STOP_TIMEOUT_MS} ms of being told to`)),
          BACKEND_STOP_TIMEOUT_MS,
        ).unref();
      },
      { once: true },
    );
  });
}
