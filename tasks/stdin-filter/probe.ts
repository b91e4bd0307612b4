import { inputOf, type HiddenInputs } from '../../probes/_shared/task/hidden-inputs.js';
import { compilePredicate } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

const INPUT = 'alpha\nbeta gamma\n\ndelta\n';

const filtered = (input: string): string =>
  input
    .split('\n')
    .slice(0, -1)
    .map((l, i) => `${i + 1}:${l.toUpperCase()}\n`)
    .join('');

const WORDS = ['kappa', 'omicron', 'rho', 'sigma tau', 'upsilon', 'phi chi', ''];

export const stdinInputs: HiddenInputs<{ output: string }> = {
  hidden: 1,
  variant(index, rng) {
    const input = index === 0 ? INPUT : `${Array.from({ length: rng.int(3, 9) }, () => rng.pick(WORDS)).join('\n')}\n`;
    return { label: index === 0 ? 'visible' : `hidden-${index}`, files: [], stdin: Buffer.from(input), expected: { output: filtered(input) } };
  },
};

export const stdinFilter: TaskCaseSpec = {
  kind: 'task',
  id: 'stdin-filter',
  title: 'stdin → stdout filter',
  policyItem: 'task.correctness',
  payload: 'tasks/stdin-filter',
  expected: 'accept',
  stdin: () => Buffer.from(INPUT),
  hiddenInputs: stdinInputs,
  predicate: (obs, ctx) =>
    compilePredicate({ type: 'exact', artifact: 'stdout', value: inputOf<{ output: string }>(ctx)?.expected.output ?? filtered(INPUT) })(obs),
};
