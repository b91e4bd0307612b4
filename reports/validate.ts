import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { packageRoot } from '../harness/paths.js';

let cache: { security: ValidateFunction; task: ValidateFunction } | undefined;

function compile(): { security: ValidateFunction; task: ValidateFunction } {
  if (cache) return cache;
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  formats.default(ajv);
  const load = (name: string): object => JSON.parse(readFileSync(join(packageRoot(), 'reports', 'schema', name), 'utf8')) as object;
  cache = { security: ajv.compile(load('security-scorecard.schema.json')), task: ajv.compile(load('task-scorecard.schema.json')) };
  return cache;
}

/** Validates a scorecard document against the published (committed) JSON Schema. */
export function validateScorecard(kind: 'security' | 'task', doc: unknown): { valid: boolean; errors: string } {
  const validate = compile()[kind];
  const valid = validate(doc);
  return { valid, errors: valid ? '' : JSON.stringify(validate.errors, null, 1) };
}
