import { averageTask } from '../_shared/average-task.js';

export const averageHangsAfterResult = averageTask({
  id: 'average-hangs-after-result',
  title: 'writes the right result, then hangs until something stops it',
  payload: 'tasks/average-hangs-after-result',
  runsToWall: true,
  load: 'wait',
  expected: 'reject',
});
