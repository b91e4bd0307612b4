import { outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../../model/probe.js';
import { SeededRng, inputOf, type HiddenInputs } from '../../probes/_shared/task/hidden-inputs.js';
import { checkPng, rgbaAt, type DecodedPng } from '../../probes/_shared/task/png-check.js';
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

/** Bar height as drawn: non-background pixels in the bar's centre column (background = the top-left pixel). */
export function barHeights(png: DecodedPng): number[] {
  const background = rgbaAt(png, 0, 0);
  return Array.from({ length: BARS }, (_, i) => {
    const x = Math.floor(i * BAR_W + BAR_W / 2);
    let n = 0;
    for (let y = 0; y < png.height; y++) if (rgbaAt(png, x, y) !== background) n++;
    return n;
  });
}

/** chart.png decodes (CRCs, filters), is 200×100, not blank, and its bars are the series' values. */
export function chartPredicate(obs: Observation, ctx?: ProbeContext): PredicateResult {
  const bytes = artifactBytes(obs, 'chart.png');
  if (typeof bytes === 'string') return { accepted: false, reason: bytes };
  const checked = checkPng(bytes, { width: WIDTH, height: HEIGHT, minColours: 2 });
  if (typeof checked === 'string') return { accepted: false, reason: `chart.png: ${checked}` };
  const want = ((ctx && inputOf<Series>(ctx)?.expected) ?? VISIBLE_SERIES).values;
  const got = barHeights(checked.png);
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
    artifacts: ['chart.png'],
    predicate: chartPredicate,
    ...fields,
  };
}
