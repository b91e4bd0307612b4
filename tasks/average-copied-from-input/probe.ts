import { averageTask } from '../_shared/average-task.js';

export const averageCopiedFromInput = averageTask({
  id: 'average-copied-from-input',
  title: 'a stale result copied from the inputs instead of computed',
  payload: 'tasks/average-copied-from-input',
  expected: 'reject',
});
