import { averageTask } from '../_shared/average-task.js';

export const averageDuplicateKey = averageTask({
  id: 'average-duplicate-key',
  title: 'result.json gives "mean" twice: a placeholder first, the right value last',
  payload: 'tasks/average-duplicate-key',
  expected: 'reject',
});
