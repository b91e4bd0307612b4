import { averageTask } from '../_shared/average-task.js';

export const averageFloatFormat = averageTask({
  id: 'average-float-format',
  title: 'the right mean in exponent notation, keys in another order, pretty-printed',
  payload: 'tasks/average-float-format',
  expected: 'accept',
});
