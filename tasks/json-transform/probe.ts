import type { TaskCase } from '../../model/probe.js';
import { compilePredicate } from '../../probes/_shared/task/predicates.js';

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

export const jsonTransform: TaskCase = {
  kind: 'task',
  id: 'json-transform',
  title: 'order lines to totals per customer (JSON in, JSON out)',
  policyItem: 'task.correctness',
  payload: 'tasks/json-transform',
  expected: 'accept',
  files: () => [{ path: 'input/orders.json', content: Buffer.from(JSON.stringify(ORDERS)), readOnly: true }],
  artifacts: ['totals.json'],
  predicate: compilePredicate({ type: 'exact', artifact: 'totals.json', value: expected() }),
};
