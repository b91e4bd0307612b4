import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';
import { jsonTransform } from '../json-transform/probe.js';

export const jsonTransformKeyOrder: TaskCaseSpec = {
  ...jsonTransform,
  id: 'json-transform-key-order',
  title: 'the right totals with keys in reverse order, indented',
  payload: 'tasks/json-transform-key-order',
  expected: 'accept',
};
