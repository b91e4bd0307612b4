import { dailyTask } from './task.js';

export const dailyTotals = dailyTask({
  id: 'daily-totals',
  title: 'sales CSV to daily totals per UTC date (RFC 4180 in and out)',
  payload: 'tasks/daily-totals',
  expected: 'accept',
});
