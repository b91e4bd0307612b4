import { averageTask } from '../_shared/average-task.js';

export const averageOffByOne = averageTask({
  id: 'average-off-by-one',
  title: 'plausible mean that silently drops the first row (exit 0)',
  payload: 'tasks/average-off-by-one',
  expected: 'reject',
});
