import { averageTask } from '../_shared/average-task.js';

export const averageCrashesAfterResult = averageTask({
  id: 'average-crashes-after-result',
  title: 'writes the right result, then exits 1 with a traceback',
  payload: 'tasks/average-crashes-after-result',
  expected: 'reject',
});
