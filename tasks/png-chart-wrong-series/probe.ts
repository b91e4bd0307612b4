import { chartTask } from '../png-chart/task.js';

export const pngChartWrongSeries = chartTask({
  id: 'png-chart-wrong-series',
  title: 'a well-formed chart of the wrong series',
  payload: 'tasks/png-chart-wrong-series',
  expected: 'reject',
});
