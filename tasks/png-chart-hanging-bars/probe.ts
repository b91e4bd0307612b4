import { chartTask } from '../png-chart/task.js';

export const pngChartHangingBars = chartTask({
  id: 'png-chart-hanging-bars',
  title: 'a chart whose bars have the right heights but hang from the top edge',
  payload: 'tasks/png-chart-hanging-bars',
  expected: 'reject',
});
