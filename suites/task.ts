import type { TaskCase } from '../harness/model/probe.js';
import { averageCorrect } from '../probes/average-correct/probe.js';
import { averageOffByOne } from '../probes/average-off-by-one/probe.js';

export const taskSuite: readonly TaskCase[] = [averageCorrect, averageOffByOne];
