import type { TaskCase } from '../../harness/model/probe.js';
import { compilePredicate } from '../../harness/task/predicates.js';

const MiB = 2 ** 20;
/** Python itself needs some room: the payload holds 80% of the limit minus this. */
const INTERPRETER_MIB = 24;

export const resourceHeadroom: TaskCase = {
  kind: 'task',
  id: 'resource-headroom',
  title: 'uses up to 80% of the memory limit and 50% of the wall limit',
  policyItem: 'resources.memoryMb',
  payload: 'resource-headroom',
  expected: 'accept',
  args: (ctx) => ({
    memoryBytes: Math.floor(ctx.policy.resources.memoryMb * 0.8 - INTERPRETER_MIB) * MiB,
    seconds: ctx.policy.resources.wallSeconds * 0.5,
  }),
  artifacts: ['result.json'],
  predicate: (obs, ctx) =>
    compilePredicate({ type: 'exact', artifact: 'result.json', field: 'heldMiB', value: Math.floor(ctx.policy.resources.memoryMb * 0.8 - INTERPRETER_MIB) })(obs),
};
