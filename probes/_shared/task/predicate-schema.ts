import { z } from 'zod';
import type { PredicateSpec } from './predicates.js';

// Apart from predicates.ts, which every built-in task case imports: only a user's task file is checked against it.
const Artifact = z.string().min(1).describe('workspace-relative artifact path, or "stdout"');
const FieldPath = z.string().min(1).describe('dot path into the artifact parsed as JSON, e.g. "totals.a"');

/** A declarative completion predicate as a user writes it in a task case. */
export const PredicateSpecSchema: z.ZodType<PredicateSpec> = z.lazy(() =>
  z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('json-schema'), artifact: Artifact, schema: z.record(z.string(), z.unknown()) }),
    z.strictObject({ type: z.literal('exact'), artifact: Artifact, field: FieldPath.optional(), value: z.unknown() }),
    z.strictObject({ type: z.literal('tolerance'), artifact: Artifact, field: FieldPath, expected: z.number(), tolerance: z.number().nonnegative() }),
    z.strictObject({ type: z.literal('sha256'), artifact: Artifact, sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits') }),
    z.strictObject({
      type: z.literal('csv-shape'),
      artifact: Artifact,
      rows: z.number().int().nonnegative().optional(),
      columns: z.array(z.string()).optional(),
    }),
    z.strictObject({
      type: z.literal('png'),
      artifact: Artifact,
      width: z.number().int().positive().optional(),
      height: z.number().int().positive().optional(),
      minColours: z.number().int().min(1).optional().describe('distinct colours the image must have at least (default 2: not blank)'),
    }),
    z
      .strictObject({ type: z.literal('exit-code'), code: z.number().int() })
      .describe('also how the program must end: the case then expects this exit status instead of 0'),
    z.strictObject({ type: z.literal('all'), of: z.array(PredicateSpecSchema).min(1) }),
  ]),
);
