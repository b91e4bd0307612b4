import { dailyTask } from '../daily-totals/task.js';

export const dailyTotalsDuplicatedRows = dailyTask({
  id: 'daily-totals-duplicated-rows',
  title: 'the day row written once per sale (duplicated rows)',
  payload: 'tasks/daily-totals-duplicated-rows',
  expected: 'reject',
});
