import { dailyTask } from '../daily-totals/task.js';

export const dailyTotalsDecimalComma = dailyTask({
  id: 'daily-totals-decimal-comma',
  title: 'daily totals written with a locale decimal comma',
  payload: 'tasks/daily-totals-decimal-comma',
  expected: 'reject',
});
