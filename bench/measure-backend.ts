import type { Backend } from '../model/backend-contract.js';
import type { Policy } from '../model/policy.js';
import type { RunContext } from '../harness/run-context.js';
import { load } from './machine.js';
import type { BenchPayload } from './payloads.js';
import type { RawTool } from './raw-tools.js';
import { adapterSide, harnessSide, rawSide, type SideRun } from './sides.js';
import { pairedRatios, summarize, type Summary } from './stats.js';

type Side = 'raw' | 'adapter' | 'harness';
const SIDES: readonly Side[] = ['raw', 'adapter', 'harness'];

export interface PayloadRow {
  payload: string;
  /** Load averages (1/5/15 min) before and after this row's rounds. */
  load: { before: number[]; after: number[] };
  wallMs: Record<Side, Summary>;
  /** Paired rounds: each ratio's two figures come from the same round. */
  ratio: { adapterVsRaw: Summary; harnessVsRaw: Summary; harnessVsAdapter: Summary };
  /** This process's CPU (user + system) per box execution; the tool's own processes are not counted. */
  cpuMsPerExec: Record<Side, Summary>;
  adapterPhasesMs: Record<'create' | 'put' | 'exec' | 'destroy', Summary>;
  problems: string[];
}

export interface MeasureInput {
  backend: Backend;
  policy: Policy;
  run: RunContext;
  raw: RawTool;
  rounds: number;
  /** One line per round (else nothing until the row is done). */
  verbose: boolean;
  log: (line: string) => void;
}

/** Warm-up, then `rounds` rounds in which raw, adapter and harness run back to back in a rotating order. */
export async function measurePayload(input: MeasureInput, payload: BenchPayload): Promise<PayloadRow> {
  const { backend, policy, run, raw } = input;
  const runs: Record<Side, SideRun[]> = { raw: [], adapter: [], harness: [] };
  const problems = new Set<string>();
  const one = (side: Side, round: number): Promise<SideRun> =>
    side === 'raw'
      ? rawSide(raw, payload, round)
      : side === 'adapter'
        ? adapterSide(backend, policy, run, payload)
        : harnessSide(backend, policy, run, payload);
  for (const side of SIDES) {
    const w = await one(side, -1);
    if (w.problem) problems.add(`warm-up: ${w.problem}`);
  }
  const before = load();
  for (let round = 0; round < input.rounds; round++) {
    // Rotating the order spreads any drift of a busy machine evenly over the three sides.
    const order = SIDES.map((_, k) => SIDES[(k + round) % SIDES.length] ?? 'raw');
    for (const side of order) {
      const r = await one(side, round);
      runs[side].push(r);
      if (r.problem) problems.add(r.problem);
    }
    if (input.verbose)
      input.log(
        `  ${backend.name} ${payload.name} round ${round + 1}/${input.rounds}: ${SIDES.map((s) => `${s} ${Math.round(runs[s].at(-1)?.ms ?? 0)} ms`).join(', ')}`,
      );
  }
  const ms = (s: Side): number[] => runs[s].map((r) => r.ms);
  const phase = (k: 'create' | 'put' | 'exec' | 'destroy'): Summary => summarize(runs.adapter.flatMap((r) => (r.phases ? [r.phases[k]] : [])));
  return {
    payload: payload.name,
    load: { before, after: load() },
    wallMs: { raw: summarize(ms('raw')), adapter: summarize(ms('adapter')), harness: summarize(ms('harness')) },
    ratio: {
      adapterVsRaw: summarize(pairedRatios(ms('adapter'), ms('raw'))),
      harnessVsRaw: summarize(pairedRatios(ms('harness'), ms('raw'))),
      harnessVsAdapter: summarize(pairedRatios(ms('harness'), ms('adapter'))),
    },
    cpuMsPerExec: {
      raw: summarize(runs.raw.map((r) => r.cpuMs)),
      adapter: summarize(runs.adapter.map((r) => r.cpuMs)),
      harness: summarize(runs.harness.map((r) => r.cpuMs)),
    },
    adapterPhasesMs: { create: phase('create'), put: phase('put'), exec: phase('exec'), destroy: phase('destroy') },
    problems: [...problems],
  };
}
