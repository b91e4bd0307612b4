import { averageTask } from '../_shared/average-task.js';

export const averageStrayCopies = {
  ...averageTask({
    id: 'average-stray-copies',
    title: 'the right result.json beside stray copies with other numbers',
    payload: 'tasks/average-stray-copies',
    expected: 'reject',
  }),
  needsWorkspaceListing: true,
};
