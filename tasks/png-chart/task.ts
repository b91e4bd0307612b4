import { outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../../model/probe.js';
import { SeededRng, inputOf, type HiddenInputs } from '../../probes/_shared/task/hidden-inputs.js';
import { barColumn, checkPng, hexColour, strayColour, type DecodedPng } from '../../probes/_shared/task/png-check.js';
import { withDeclaredOutputs, type DeclaredOutputs } from '../../probes/_shared/task/outputs.js';
import { artifactBytes } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

export const WIDTH = 200;
export const HEIGHT = 100;
const BARS = 8;
const BAR_W = WIDTH / BARS;

export interface Series {
  values: number[];
  previous: number[];
}

/** The visible series; `previous` is there to be plotted by mistake. */
export const VISIBLE_SERIES: Series = { values: [12, 40, 7, 19, 88, 3, 61, 25], previous: [10, 35, 9, 22, 70, 5, 55, 30] };

export const seriesInputs: HiddenInputs<Series> = {
  hidden: 1,
  variant(index, rng) {
    const series =
      index === 0
        ? VISIBLE_SERIES
        : { values: Array.from({ length: BARS }, () => rng.int(5, 95)), previous: Array.from({ length: BARS }, () => rng.int(5, 95)) };
    return {
      label: index === 0 ? 'visible' : `hidden-${index}`,
      files: [{ path: 'input/series.json', content: Buffer.from(JSON.stringify({ title: 'revenue', ...series })), readOnly: true }],
      expected: series,
    };
  },
};

/** The colours the task states: bars #285ac8 on a white background, nothing else. */
export const BAR_COLOUR = 0x285ac8ff;
export const BACKGROUND = 0xffffffff;

/** The chart is chart.png and nothing else (a binary output: no text contract). */
export const CHART_OUTPUTS: DeclaredOutputs = { files: ['chart.png'] };

/**
 * Bar heights as drawn, read at three columns of each bar (a quarter, the middle, three quarters across): each
 * column one contiguous run of the bar colour standing on the baseline, the three of equal height. What is
 * wrong with the first bar that is not so, as a string.
 */
export function barHeights(png: DecodedPng): number[] | string {
  const heights: number[] = [];
  for (let i = 0; i < BARS; i++) {
    const columns = [0.25, 0.5, 0.75].map((f) => Math.floor(i * BAR_W + BAR_W * f));
    const runs = columns.map((x) => barColumn(png, x, { bar: BAR_COLOUR, background: BACKGROUND }));
    const bad = runs.find((r) => typeof r === 'string');
    if (bad !== undefined) return `bar ${i + 1}: ${bad}`;
    const [a, b, c] = runs as number[];
    if (a !== b || b !== c) return `bar ${i + 1} is not a bar: its columns are ${runs.join(', ')} px tall`;
    heights.push(b ?? 0);
  }
  return heights;
}

/** chart.png decodes (CRCs, filters), is 200×100 in the stated colours, and its bars stand on the baseline at the series' values. */
export function chartPredicate(obs: Observation, ctx?: ProbeContext): PredicateResult {
  const bytes = artifactBytes(obs, 'chart.png');
  if (typeof bytes === 'string') return { accepted: false, reason: bytes };
  const checked = checkPng(bytes, { width: WIDTH, height: HEIGHT, minColours: 2 });
  if (typeof checked === 'string') return { accepted: false, reason: `chart.png: ${checked}` };
  const want = ((ctx && inputOf<Series>(ctx)?.expected) ?? VISIBLE_SERIES).values;
  const stray = strayColour(checked.png, [BAR_COLOUR, BACKGROUND]);
  if (stray)
    return {
      accepted: false,
      reason: `chart.png has ${hexColour(stray.colour)} at (${stray.x}, ${stray.y}): the chart is ${hexColour(BAR_COLOUR)} bars on ${hexColour(BACKGROUND)}, nothing else`,
    };
  const got = barHeights(checked.png);
  if (typeof got === 'string') return { accepted: false, reason: `chart.png: ${got}` };
  const evidence = [
    outside(
      'completion-predicate',
      `chart.png ${checked.png.width}×${checked.png.height}, ${checked.colours} colours, bars ${got.join(',')} px; series ${want.join(',')}`,
      'artifact:chart.png',
    ),
  ];
  const off = got.findIndex((h, i) => Math.abs(h - (want[i] ?? -1)) > 1);
  if (off >= 0)
    return { accepted: false, reason: `bar ${off + 1} is ${got[off]} px tall, the series value is ${want[off]}: not a chart of this series`, evidence };
  return { accepted: true, reason: `chart.png decodes and its ${BARS} bars match the series`, evidence };
}

export function chartTask(fields: Pick<TaskCase, 'id' | 'title' | 'payload' | 'expected'>): TaskCaseSpec {
  return {
    kind: 'task',
    policyItem: 'task.correctness',
    files: (ctx) => seriesInputs.variant(0, new SeededRng('visible', 'variant-0'), ctx).files,
    hiddenInputs: seriesInputs,
    artifacts: CHART_OUTPUTS.files,
    outputs: CHART_OUTPUTS,
    predicate: withDeclaredOutputs(CHART_OUTPUTS, chartPredicate),
    ...fields,
  };
}
