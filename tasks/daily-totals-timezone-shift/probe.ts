import { dailyTask } from '../daily-totals/task.js';

export const dailyTotalsTimezoneShift = dailyTask({
  id: 'daily-totals-timezone-shift',
  title: 'daily totals bucketed in New York time instead of UTC',
  payload: 'tasks/daily-totals-timezone-shift',
  expected: 'reject',
});
