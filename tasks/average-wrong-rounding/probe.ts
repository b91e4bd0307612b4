import { averageTask } from '../_shared/average-task.js';

export const averageWrongRounding = averageTask({
  id: 'average-wrong-rounding',
  title: 'mean rounded to one decimal before it is written',
  payload: 'tasks/average-wrong-rounding',
  expected: 'reject',
});
