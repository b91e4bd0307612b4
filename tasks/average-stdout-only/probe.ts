import { averageTask } from '../_shared/average-task.js';

export const averageStdoutOnly = averageTask({
  id: 'average-stdout-only',
  title: 'right answer on stdout, artifact never written',
  payload: 'tasks/average-stdout-only',
  expected: 'reject',
});
