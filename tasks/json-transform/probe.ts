import { compilePredicate } from '../../probes/_shared/task/predicates.js';
import { withDeclaredOutputs, type DeclaredOutputs } from '../../probes/_shared/task/outputs.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

const ORDERS = [
  { customer: 'acme', qty: 3, unitCents: 1999 },
  { customer: 'globex', qty: 1, unitCents: 250000 },
  { customer: 'acme', qty: 12, unitCents: 75 },
  { customer: 'initech', qty: 7, unitCents: 1234 },
];

function expected(): { totals: Record<string, number>; grandTotalCents: number } {
  const totals: Record<string, number> = {};
  for (const o of ORDERS) totals[o.customer] = (totals[o.customer] ?? 0) + o.qty * o.unitCents;
  return { totals, grandTotalCents: Object.values(totals).reduce((a, b) => a + b, 0) };
}

/** totals.json and nothing else; JSON text without a byte order mark. */
export const TRANSFORM_OUTPUTS: DeclaredOutputs = { files: ['totals.json'], text: { bom: 'reject', trailingSpace: 'allow' } };

export const jsonTransform: TaskCaseSpec = {
  kind: 'task',
  id: 'json-transform',
  title: 'order lines to totals per customer (JSON in, JSON out)',
  policyItem: 'task.correctness',
  payload: 'tasks/json-transform',
  expected: 'accept',
  files: () => [{ path: 'input/orders.json', content: Buffer.from(JSON.stringify(ORDERS)), readOnly: true }],
  artifacts: TRANSFORM_OUTPUTS.files,
  outputs: TRANSFORM_OUTPUTS,
  predicate: withDeclaredOutputs(TRANSFORM_OUTPUTS, compilePredicate({ type: 'exact', artifact: 'totals.json', value: expected() })),
};
