import { averageTask } from '../_shared/average-task.js';

export const averageHardcoded = averageTask({
  id: 'average-hardcoded',
  title: 'the visible answer hard-coded: right on the visible input only',
  payload: 'tasks/average-hardcoded',
  expected: 'reject',
});
