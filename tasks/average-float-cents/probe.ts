import { averageTask } from '../_shared/average-task.js';

export const averageFloatCents = averageTask({
  id: 'average-float-cents',
  title: 'values turned into cents with int(t*100) before averaging (19.99 becomes 1998 cents)',
  payload: 'tasks/average-float-cents',
  expected: 'reject',
});
