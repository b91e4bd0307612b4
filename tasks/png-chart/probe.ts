import { chartTask } from './task.js';

export const pngChart = chartTask({
  id: 'png-chart',
  title: 'a bar chart of a series written as a PNG with the standard library',
  payload: 'tasks/png-chart',
  expected: 'accept',
});
