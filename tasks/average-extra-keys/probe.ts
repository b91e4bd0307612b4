import { averageTask } from '../_shared/average-task.js';

export const averageExtraKeys = averageTask({
  id: 'average-extra-keys',
  title: 'right numbers plus "status": "partial" and an errors list',
  payload: 'tasks/average-extra-keys',
  expected: 'reject',
});
