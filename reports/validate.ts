import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { ValidateFunction } from 'ajv';
import { packageRoot } from '../core/paths.js';
import { SecurityScorecardSchema, TaskScorecardSchema } from '../model/scorecard.js';

type Kind = 'security' | 'task';

let cache: Record<Kind, ValidateFunction> | undefined;

/** Ajv and the published schemas, compiled on first need (about 0.4 s and 25 MB, so only for a card zod did not pass as it is). */
function compiled(): Record<Kind, ValidateFunction> {
  if (cache) return cache;
  const require = createRequire(import.meta.url);
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  const formats = require('ajv-formats') as typeof import('ajv-formats').default;
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  formats(ajv);
  const load = (name: string): object => JSON.parse(readFileSync(join(packageRoot(), 'reports', 'schema', name), 'utf8')) as object;
  cache = { security: ajv.compile(load('security-scorecard.schema.json')), task: ajv.compile(load('task-scorecard.schema.json')) };
  return cache;
}

const ZOD = { security: SecurityScorecardSchema, task: TaskScorecardSchema } as const;

/**
 * A card the zod schema (the source the published schema is generated from) takes unchanged, as JSON:
 * nothing stripped, defaulted or transformed, so nothing the published schema would refuse.
 */
function zodTakesAsIs(kind: Kind, doc: unknown): boolean {
  const asJson: unknown = JSON.parse(JSON.stringify(doc) ?? 'null');
  const parsed = ZOD[kind].safeParse(asJson);
  return parsed.success && isDeepStrictEqual(JSON.parse(JSON.stringify(parsed.data)), asJson);
}

/**
 * Validates a scorecard document against the published (committed) JSON Schema. A card zod takes as it is
 * passes without compiling the JSON Schema; any other goes to Ajv, whose answer and errors are final.
 */
export function validateScorecard(kind: Kind, doc: unknown): { valid: boolean; errors: string } {
  if (zodTakesAsIs(kind, doc)) return { valid: true, errors: '' };
  const validate = compiled()[kind];
  const valid = validate(doc);
  return { valid, errors: valid ? '' : JSON.stringify(validate.errors, null, 1) };
}
