import { averageTask } from '../_shared/average-task.js';

export const averageSchemaInvalid = averageTask({
  id: 'average-schema-invalid',
  title: 'right number in a schema-invalid artifact',
  payload: 'tasks/average-schema-invalid',
  expected: 'reject',
});
