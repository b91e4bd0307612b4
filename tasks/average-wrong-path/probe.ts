import { averageTask } from '../_shared/average-task.js';

export const averageWrongPath = averageTask({
  id: 'average-wrong-path',
  title: 'the right result written to output/result.json instead of result.json',
  payload: 'tasks/average-wrong-path',
  expected: 'reject',
});
