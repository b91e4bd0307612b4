import { averageTask } from '../_shared/average-task.js';

export const averageDroppedRows = averageTask({
  id: 'average-dropped-rows',
  title: 'mean that silently skips rows it cannot parse as integers',
  payload: 'tasks/average-dropped-rows',
  expected: 'reject',
});
