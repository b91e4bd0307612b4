import { averageTask } from '../_shared/average-task.js';

export const averagePartialSuccess = averageTask({
  id: 'average-partial-success',
  title: 'a partial result announced as complete success',
  payload: 'tasks/average-partial-success',
  expected: 'reject',
});
