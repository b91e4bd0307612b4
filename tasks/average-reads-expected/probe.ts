import { averageTask } from '../_shared/average-task.js';

export const averageReadsExpected = averageTask({
  id: 'average-reads-expected',
  title: 'reads the expected value from a file left in reach',
  payload: 'tasks/average-reads-expected',
  expected: 'reject',
});
