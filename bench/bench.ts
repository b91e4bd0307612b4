/**
 * npm run bench: what sandcheck's harness costs on top of each backend, as ratios against that
 * backend's own bare cost measured in the same run (never as absolute timings in tests).
 *
 *   bare   = create + exec `python3 -c pass` + destroy, straight through the backend
 *   probe  = one probe through the whole harness (payload upload, capture, judge, export, teardown)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Backend } from '../backends/contract.js';
import { loadBackend } from '../backends/registry.js';
import { CI_POLICY } from '../harness/model/policy.js';
import { openRunContext } from '../harness/run-context.js';
import { Runner } from '../harness/runner.js';
import { averageCorrect } from '../probes/average-correct/probe.js';
import { secretDecoyEnv } from '../probes/secret-decoy-env/probe.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const sink = { write: () => undefined };

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function bare(backend: Backend, runId: string): Promise<{ coldStartMs: number; bareMs: number }> {
  const ctx = await openRunContext(runId);
  const cold: number[] = [];
  const total: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      const env = await backend.create(CI_POLICY, { runId, controllerEnv: {}, scratchDir: ctx.scratchDir });
      await env.exec({ argv: ['python3', '-c', 'pass'], timeoutMs: 10_000, maxOutputBytes: 1024, stdout: sink, stderr: sink, signal: new AbortController().signal });
      cold.push(performance.now() - t0);
      await env.destroy();
      total.push(performance.now() - t0);
    }
  } finally {
    await ctx.dispose();
  }
  return { coldStartMs: median(cold), bareMs: median(total) };
}

async function probe(backend: Backend, runId: string, spec: typeof secretDecoyEnv | typeof averageCorrect): Promise<number> {
  const ctx = await openRunContext(runId);
  const times: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      await new Runner({ backend, policy: CI_POLICY, probes: [spec], run: ctx, concurrency: 1 }).run();
      times.push(performance.now() - t0);
    }
  } finally {
    await ctx.dispose();
  }
  return median(times);
}

const rows: Record<string, unknown>[] = [];
for (const name of ['process', 'bwrap']) {
  const backend = await loadBackend(name);
  try {
    await backend.preflight();
  } catch (err) {
    console.log(`${name}: skipped (${err instanceof Error ? err.message : String(err)})`);
    continue;
  }
  const { coldStartMs, bareMs } = await bare(backend, `rbench${name.slice(0, 3)}1`);
  const secretMs = await probe(backend, `rbench${name.slice(0, 3)}2`, secretDecoyEnv);
  const taskMs = await probe(backend, `rbench${name.slice(0, 3)}3`, averageCorrect);
  rows.push({
    backend: name,
    rounds: ROUNDS,
    coldStartMs: Math.round(coldStartMs),
    bareMs: Math.round(bareMs),
    securityProbeRatio: +(secretMs / bareMs).toFixed(2),
    taskCaseRatio: +(taskMs / bareMs).toFixed(2),
  });
}
console.table(rows);
await mkdir('out', { recursive: true });
await writeFile('out/bench.json', `${JSON.stringify({ at: new Date().toISOString(), rows }, null, 2)}\n`);
console.log('wrote out/bench.json (ratios are harness cost / the backend\'s bare create+exec+destroy)');
