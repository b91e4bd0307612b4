import type { TaskCase } from '../harness/model/probe.js';
import { averageCopiedFromInput } from '../probes/average-copied-from-input/probe.js';
import { averageCorrect } from '../probes/average-correct/probe.js';
import { averageCorrected } from '../probes/average-corrected/probe.js';
import { averageDroppedRows } from '../probes/average-dropped-rows/probe.js';
import { averageEmptyOutput } from '../probes/average-empty-output/probe.js';
import { averageOffByOne } from '../probes/average-off-by-one/probe.js';
import { averageSchemaInvalid } from '../probes/average-schema-invalid/probe.js';
import { averageStdoutOnly } from '../probes/average-stdout-only/probe.js';
import { averageWrongRounding } from '../probes/average-wrong-rounding/probe.js';
import { exitCodePropagation } from '../probes/exit-code-propagation/probe.js';
import { jsonTransform } from '../probes/json-transform/probe.js';
import { maxExportFiles } from '../probes/max-export-files/probe.js';
import { pngChart } from '../probes/png-chart/probe.js';
import { resourceHeadroom } from '../probes/resource-headroom/probe.js';
import { stdinFilter } from '../probes/stdin-filter/probe.js';

/** Legitimate work the policy must allow (each must be accepted). */
export const legitimateTasks: readonly TaskCase[] = [
  averageCorrect,
  jsonTransform,
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
];

export const taskSuite: readonly TaskCase[] = [...legitimateTasks, ...counterexampleTasks];
