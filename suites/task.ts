import type { TaskCase } from '../model/probe.js';
import { builtInSpecs } from './index.generated.js';
import { averageCopiedFromInput } from '../tasks/average-copied-from-input/probe.js';
import { averageCorrect } from '../tasks/average-correct/probe.js';
import { averageCorrected } from '../tasks/average-corrected/probe.js';
import { averageCrashesAfterResult } from '../tasks/average-crashes-after-result/probe.js';
import { averageDroppedRows } from '../tasks/average-dropped-rows/probe.js';
import { averageEmptyOutput } from '../tasks/average-empty-output/probe.js';
import { averageExtraKeys } from '../tasks/average-extra-keys/probe.js';
import { averageHangsAfterResult } from '../tasks/average-hangs-after-result/probe.js';
import { averageHardcoded } from '../tasks/average-hardcoded/probe.js';
import { averageHeaderAsData } from '../tasks/average-header-as-data/probe.js';
import { averageOffByOne } from '../tasks/average-off-by-one/probe.js';
import { averagePartialSuccess } from '../tasks/average-partial-success/probe.js';
import { averageReadsExpected } from '../tasks/average-reads-expected/probe.js';
import { averageSchemaInvalid } from '../tasks/average-schema-invalid/probe.js';
import { averageStdoutOnly } from '../tasks/average-stdout-only/probe.js';
import { averageTruncated } from '../tasks/average-truncated/probe.js';
import { averageVisibleFilename } from '../tasks/average-visible-filename/probe.js';
import { averageWrongPath } from '../tasks/average-wrong-path/probe.js';
import { averageWrongRounding } from '../tasks/average-wrong-rounding/probe.js';
import { dailyTotals } from '../tasks/daily-totals/probe.js';
import { dailyTotalsDecimalComma } from '../tasks/daily-totals-decimal-comma/probe.js';
import { dailyTotalsDuplicatedRows } from '../tasks/daily-totals-duplicated-rows/probe.js';
import { dailyTotalsTimezoneShift } from '../tasks/daily-totals-timezone-shift/probe.js';
import { dailyTotalsWrongOrder } from '../tasks/daily-totals-wrong-order/probe.js';
import { exitCodePropagation } from '../tasks/exit-code-propagation/probe.js';
import { jsonTransform } from '../tasks/json-transform/probe.js';
import { maxExportFiles } from '../tasks/max-export-files/probe.js';
import { pngChart } from '../tasks/png-chart/probe.js';
import { pngChartBlank } from '../tasks/png-chart-blank/probe.js';
import { pngChartWrongSeries } from '../tasks/png-chart-wrong-series/probe.js';
import { resourceHeadroom } from '../tasks/resource-headroom/probe.js';
import { stdinFilter } from '../tasks/stdin-filter/probe.js';

/** Legitimate work the policy must allow (each must be accepted). */
export const legitimateTasks: readonly TaskCase[] = [
  averageCorrect,
  jsonTransform,
  dailyTotals,
  pngChart,
  resourceHeadroom,
  maxExportFiles,
  stdinFilter,
  exitCodePropagation,
  averageCorrected,
];

/** Business counterexamples: plausible, exit 0, wrong (each must be rejected by its predicate). */
export const counterexampleTasks: readonly TaskCase[] = [
  averageOffByOne,
  averageWrongRounding,
  averageDroppedRows,
  averageEmptyOutput,
  averageStdoutOnly,
  averageSchemaInvalid,
  averageCopiedFromInput,
  averageHeaderAsData,
  averageTruncated,
  averageExtraKeys,
  averagePartialSuccess,
  averageWrongPath,
  dailyTotalsDecimalComma,
  dailyTotalsWrongOrder,
  dailyTotalsTimezoneShift,
  dailyTotalsDuplicatedRows,
  pngChartWrongSeries,
  pngChartBlank,
];

/** Programs that pass the visible input only: the hidden inputs must reject them. */
export const visibleOnlyTasks: readonly TaskCase[] = [averageHardcoded, averageVisibleFilename, averageReadsExpected];

/** The right result, but the program did not end well: the run counts. */
export const badEndingTasks: readonly TaskCase[] = [averageCrashesAfterResult, averageHangsAfterResult];

/** Every built-in task case (suites/index.generated.ts), the selections above first, then any other by id. */
export const taskSuite: readonly TaskCase[] = (() => {
  const listed = [...legitimateTasks, ...counterexampleTasks, ...visibleOnlyTasks, ...badEndingTasks];
  const rest = builtInSpecs.filter((s): s is TaskCase => s.kind === 'task' && !listed.some((l) => l.id === s.id));
  return [...listed, ...rest];
})();
