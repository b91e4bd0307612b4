import { chartTask } from '../png-chart/task.js';

export const pngChartScatteredPixels = chartTask({
  id: 'png-chart-scattered-pixels',
  title: 'scattered pixels and no bars, each column holding as many pixels as its value',
  payload: 'tasks/png-chart-scattered-pixels',
  expected: 'reject',
});
