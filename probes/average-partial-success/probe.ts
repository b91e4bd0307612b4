import { averageTask } from '../_shared/average-task.js';

export const averagePartialSuccess = averageTask({
  id: 'average-partial-success',
  title: 'a partial result announced as complete success',
  payload: 'average-partial-success',
  expected: 'reject',
});
