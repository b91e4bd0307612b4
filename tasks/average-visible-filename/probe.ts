import { averageTask } from '../_shared/average-task.js';

export const averageVisibleFilename = averageTask({
  id: 'average-visible-filename',
  title: 'special-cases the visible file name, buggy everywhere else',
  payload: 'tasks/average-visible-filename',
  expected: 'reject',
});
