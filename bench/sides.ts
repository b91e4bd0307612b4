import { performance } from 'node:perf_hooks';
import type { Backend } from '../model/backend-contract.js';
import type { Policy } from '../model/policy.js';
import type { RunContext } from '../harness/run-context.js';
import { Runner } from '../harness/runner.js';
import type { BenchPayload } from './payloads.js';
import type { RawTool } from './raw-tools.js';

/** One timed round of one side: wall ms, this process's CPU ms, and what went wrong if anything. */
export interface SideRun {
  ms: number;
  cpuMs: number;
  problem?: string;
  /** Adapter side only: create / putFiles / exec / destroy in ms. */
  phases?: Record<'create' | 'put' | 'exec' | 'destroy', number>;
}

const cpuMs = (d: NodeJS.CpuUsage): number => (d.user + d.system) / 1000;
const sink = { write: (): void => undefined };

export async function rawSide(tool: RawTool, payload: BenchPayload, round: number): Promise<SideRun> {
  const p = await payload.prepare();
  const c0 = process.cpuUsage();
  const r = await tool.run(p, round);
  const out: SideRun = { ms: r.ms, cpuMs: cpuMs(process.cpuUsage(c0)) };
  if (r.exitCode !== 0) out.problem = `raw tool: exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n').slice(-1)[0] ?? ''}`;
  return out;
}

/** The backend adapter alone: create, put the payload's files, exec it, destroy. */
export async function adapterSide(backend: Backend, policy: Policy, run: RunContext, payload: BenchPayload): Promise<SideRun> {
  const p = await payload.prepare();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const env = await backend.create(policy, { runId: run.runId, controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
  const t1 = performance.now();
  let t2 = t1;
  let t3 = t1;
  let problem: string | undefined;
  try {
    if (p.files.length > 0) await env.putFiles(p.files);
    t2 = performance.now();
    const r = await env.exec({
      argv: p.argv,
      env: p.env,
      timeoutMs: policy.resources.wallSeconds * 1000,
      maxOutputBytes: policy.output.maxBytes,
      stdout: sink,
      stderr: sink,
      signal: new AbortController().signal,
    });
    t3 = performance.now();
    if (r.exitCode !== 0) problem = `adapter: exit ${r.exitCode ?? r.signal}${r.startError ? ` (${r.startError})` : ''}`;
  } finally {
    const left = await env.destroy();
    if (left.items.length > 0) problem ??= `adapter: destroy left ${left.items.join('; ')}`;
  }
  const t4 = performance.now();
  return {
    ms: t4 - t0,
    cpuMs: cpuMs(process.cpuUsage(c0)),
    phases: { create: t1 - t0, put: t2 - t1, exec: t3 - t2, destroy: t4 - t3 },
    ...(problem ? { problem } : {}),
  };
}

/** The whole harness: a Runner with the one probe (payload upload, bounded capture, canary scan, judge, teardown checks). */
export async function harnessSide(backend: Backend, policy: Policy, run: RunContext, payload: BenchPayload): Promise<SideRun> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { security } = await new Runner({ backend, policy, probes: [payload.probe], run, concurrency: 1 }).run();
  const ms = performance.now() - t0;
  const out: SideRun = { ms, cpuMs: cpuMs(process.cpuUsage(c0)) };
  const r = security[0];
  const exit = r?.observation?.exitCode;
  if (!r) out.problem = 'harness: no result';
  else if (r.harnessError) out.problem = `harness: ${r.harnessError.code}: ${r.harnessError.message}`;
  else if (exit !== 0)
    out.problem = `harness: payload exit ${exit ?? r.observation?.signal ?? 'unknown'}${r.observation?.startError ? ` (${r.observation.startError})` : ''}`;
  return out;
}
