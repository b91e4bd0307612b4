import type { TaskCase } from '../../harness/model/probe.js';
import { compilePredicate } from '../../harness/task/predicates.js';

const CODE = 3;

export const exitCodePropagation: TaskCase = {
  kind: 'task',
  id: 'exit-code-propagation',
  title: 'a deliberate exit status reaches the controller exactly',
  policyItem: 'task.correctness',
  payload: 'exit-code-propagation',
  expected: 'accept',
  args: () => ({ code: CODE }),
  artifacts: ['status.json'],
  predicate: compilePredicate({
    type: 'all',
    of: [
      { type: 'exit-code', code: CODE },
      { type: 'exact', artifact: 'status.json', field: 'willExit', value: CODE },
    ],
  }),
};
