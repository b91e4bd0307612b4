import { chartTask } from '../png-chart/task.js';

export const pngChartBlank = chartTask({
  id: 'png-chart-blank',
  title: 'a valid PNG of the right size with nothing drawn',
  payload: 'tasks/png-chart-blank',
  expected: 'reject',
});
