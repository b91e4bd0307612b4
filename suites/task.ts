import type { TaskCase } from '../model/probe.js';
import { averageCopiedFromInput } from '../probes/average-copied-from-input/probe.js';
import { averageCorrect } from '../probes/average-correct/probe.js';
import { averageCorrected } from '../probes/average-corrected/probe.js';
import { averageCrashesAfterResult } from '../probes/average-crashes-after-result/probe.js';
import { averageDroppedRows } from '../probes/average-dropped-rows/probe.js';
import { averageEmptyOutput } from '../probes/average-empty-output/probe.js';
import { averageExtraKeys } from '../probes/average-extra-keys/probe.js';
import { averageHangsAfterResult } from '../probes/average-hangs-after-result/probe.js';
import { averageHardcoded } from '../probes/average-hardcoded/probe.js';
import { averageHeaderAsData } from '../probes/average-header-as-data/probe.js';
import { averageOffByOne } from '../probes/average-off-by-one/probe.js';
import { averagePartialSuccess } from '../probes/average-partial-success/probe.js';
import { averageReadsExpected } from '../probes/average-reads-expected/probe.js';
import { averageSchemaInvalid } from '../probes/average-schema-invalid/probe.js';
import { averageStdoutOnly } from '../probes/average-stdout-only/probe.js';
import { averageTruncated } from '../probes/average-truncated/probe.js';
import { averageVisibleFilename } from '../probes/average-visible-filename/probe.js';
import { averageWrongPath } from '../probes/average-wrong-path/probe.js';
import { averageWrongRounding } from '../probes/average-wrong-rounding/probe.js';
import { dailyTotals } from '../probes/daily-totals/probe.js';
import { dailyTotalsDecimalComma } from '../probes/daily-totals-decimal-comma/probe.js';
import { dailyTotalsDuplicatedRows } from '../probes/daily-totals-duplicated-rows/probe.js';
import { dailyTotalsTimezoneShift } from '../probes/daily-totals-timezone-shift/probe.js';
import { dailyTotalsWrongOrder } from '../probes/daily-totals-wrong-order/probe.js';
import { exitCodePropagation } from '../probes/exit-code-propagation/probe.js';
import { jsonTransform } from '../probes/json-transform/probe.js';
import { maxExportFiles } from '../probes/max-export-files/probe.js';
import { pngChart } from '../probes/png-chart/probe.js';
import { pngChartBlank } from '../probes/png-chart-blank/probe.js';
import { pngChartWrongSeries } from '../probes/png-chart-wrong-series/probe.js';
import { resourceHeadroom } from '../probes/resource-headroom/probe.js';
import { stdinFilter } from '../probes/stdin-filter/probe.js';

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

export const taskSuite: readonly TaskCase[] = [...legitimateTasks, ...counterexampleTasks, ...visibleOnlyTasks, ...badEndingTasks];
