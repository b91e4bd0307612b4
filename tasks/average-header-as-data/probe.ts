import { averageTask } from '../_shared/average-task.js';

export const averageHeaderAsData = averageTask({
  id: 'average-header-as-data',
  title: 'the header row counted as a data row',
  payload: 'tasks/average-header-as-data',
  expected: 'reject',
});
