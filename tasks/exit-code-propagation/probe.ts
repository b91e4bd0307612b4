import { compilePredicate } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

const CODE = 3;

export const exitCodePropagation: TaskCaseSpec = {
  kind: 'task',
  id: 'exit-code-propagation',
  title: 'a deliberate exit status reaches the controller exactly',
  policyItem: 'task.correctness',
  payload: 'tasks/exit-code-propagation',
  expected: 'accept',
  args: () => ({ code: CODE }),
  expectedExit: CODE,
  artifacts: ['status.json'],
  predicate: compilePredicate({
    type: 'all',
    of: [
      { type: 'exit-code', code: CODE },
      { type: 'exact', artifact: 'status.json', field: 'willExit', value: CODE },
    ],
  }),
};
