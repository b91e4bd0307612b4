import { chartTask } from '../png-chart/task.js';

export const pngChartWrongColour = chartTask({
  id: 'png-chart-wrong-colour',
  title: 'the right bars in a colour other than the one the task states',
  payload: 'tasks/png-chart-wrong-colour',
  expected: 'reject',
});
