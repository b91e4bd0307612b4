import { dailyTask } from '../daily-totals/task.js';

export const dailyTotalsBom = dailyTask({
  id: 'daily-totals-bom',
  title: 'the right report written with a UTF-8 byte order mark the task does not allow',
  payload: 'tasks/daily-totals-bom',
  expected: 'reject',
});
