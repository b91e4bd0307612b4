import { averageTask } from '../_shared/average-task.js';

/** The correction loop: attempt 1 crashes, attempt 2 is wrong, attempt 3 is the correct program of average-correct. */
export const averageCorrected = averageTask({
  id: 'average-corrected',
  title: 'correct on the third attempt (crash, wrong answer, right answer)',
  payload: 'tasks/average-corrected',
  expected: 'accept',
  attempts: [{ payloadFile: 'attempt-1.py' }, { payloadFile: 'attempt-2.py' }, { payload: 'tasks/average-correct' }],
});
