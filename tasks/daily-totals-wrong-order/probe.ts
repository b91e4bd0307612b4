import { dailyTask } from '../daily-totals/task.js';

export const dailyTotalsWrongOrder = dailyTask({
  id: 'daily-totals-wrong-order',
  title: 'daily totals sorted by total instead of by date',
  payload: 'tasks/daily-totals-wrong-order',
  expected: 'reject',
});
