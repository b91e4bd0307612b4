import { averageTask } from '../_shared/average-task.js';

export const averageEmptyOutput = averageTask({
  id: 'average-empty-output',
  title: 'no output at all, exit 0',
  payload: 'tasks/average-empty-output',
  expected: 'reject',
});
