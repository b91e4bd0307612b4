import type { TaskCase } from '../../harness/model/probe.js';
import { compilePredicate } from '../../harness/task/predicates.js';

const INPUT = 'alpha\nbeta gamma\n\ndelta\n';
const OUTPUT = '1:ALPHA\n2:BETA GAMMA\n3:\n4:DELTA\n';

export const stdinFilter: TaskCase = {
  kind: 'task',
  id: 'stdin-filter',
  title: 'stdin → stdout filter',
  policyItem: 'task.correctness',
  payload: 'stdin-filter',
  expected: 'accept',
  stdin: () => Buffer.from(INPUT),
  predicate: compilePredicate({ type: 'exact', artifact: 'stdout', value: OUTPUT }),
};
