import { averageTask } from '../_shared/average-task.js';

export const averageCorrect = averageTask({
  id: 'average-correct',
  title: 'mean of a read-only CSV written to an artifact',
  payload: 'tasks/average-correct',
  expected: 'accept',
});
