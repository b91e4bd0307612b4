import { averageTask } from '../_shared/average-task.js';

export const averageTruncated = averageTask({
  id: 'average-truncated',
  title: 'silently stops after 12 rows (enough for the visible input)',
  payload: 'tasks/average-truncated',
  expected: 'reject',
});
