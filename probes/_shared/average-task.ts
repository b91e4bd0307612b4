import { outside } from '../../harness/model/evidence.js';
import type { Observation, PredicateResult, TaskCase } from '../../harness/model/probe.js';

/** Fixed input so expected and actual can be compared exactly (values chosen so every row matters). */
export const AVERAGE_VALUES: readonly number[] = [12.5, 40, 7.25, 19, 88.5, 3, 61.75, 25, 14, 50.5, 9, 33.25];

export function averageCsv(): Uint8Array {
  return Buffer.from(`value\n${AVERAGE_VALUES.join('\n')}\n`);
}

export const expectedMean = (): number => AVERAGE_VALUES.reduce((a, b) => a + b, 0) / AVERAGE_VALUES.length;

/** Completion predicate, evaluated outside: result.json holds the mean of every input row. */
export function averagePredicate(obs: Observation): PredicateResult {
  const artifact = obs.artifacts.find((a) => a.path === 'result.json');
  if (!artifact?.content) return { accepted: false, reason: `artifact result.json ${artifact?.kind === 'missing' || !artifact ? 'is missing' : `is not a readable regular file (${artifact.kind})`}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(artifact.content).toString('utf8'));
  } catch {
    return { accepted: false, reason: 'result.json is not valid JSON' };
  }
  const mean = typeof parsed === 'object' && parsed !== null ? (parsed as { mean?: unknown }).mean : undefined;
  if (typeof mean !== 'number') return { accepted: false, reason: 'result.json has no numeric "mean"' };
  const expected = expectedMean();
  const evidence = [outside('completion-predicate', `mean ${mean}, expected ${expected} (tolerance 1e-9)`, 'artifact:result.json')];
  if (Math.abs(mean - expected) > 1e-9) return { accepted: false, reason: `mean ${mean} ≠ expected ${expected}`, evidence };
  return { accepted: true, reason: `mean ${mean} equals the mean of all ${AVERAGE_VALUES.length} input rows`, evidence };
}

export function averageTask(fields: Pick<TaskCase, 'id' | 'title' | 'payload' | 'expected'>): TaskCase {
  return {
    kind: 'task',
    policyItem: 'task.correctness',
    files: () => [{ path: 'input/data.csv', content: averageCsv(), readOnly: true }],
    artifacts: ['result.json'],
    predicate: averagePredicate,
    ...fields,
  };
}
