import { createHash } from 'node:crypto';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type formatsModule from 'ajv-formats';
import { parse as parseCsvSync } from 'csv-parse/sync';
import { outside } from '../../../model/evidence.js';
import type { Observation, PredicateResult } from '../../../model/probe.js';
import { checkPng } from './png-check.js';
import { lazyRequire } from '../../../core/lazy-require.js';

const ajv2020 = lazyRequire<typeof Ajv2020Module>('ajv/dist/2020.js');
const ajvFormats = lazyRequire<typeof formatsModule>('ajv-formats');

/** Declarative completion predicates a user can write in a YAML task case. */
export type PredicateSpec =
  | { type: 'json-schema'; artifact: string; schema: Record<string, unknown> }
  | { type: 'exact'; artifact: string; field?: string | undefined; value: unknown }
  | { type: 'tolerance'; artifact: string; field: string; expected: number; tolerance: number }
  | { type: 'sha256'; artifact: string; sha256: string }
  | { type: 'csv-shape'; artifact: string; rows?: number | undefined; columns?: string[] | undefined }
  | { type: 'png'; artifact: string; width?: number | undefined; height?: number | undefined; minColours?: number | undefined }
  | { type: 'exit-code'; code: number }
  | { type: 'all'; of: PredicateSpec[] };

/** A predicate could not be evaluated at all (bad schema, bad field path): a harness error, not a rejection. */
export class PredicateError extends Error {}

/** The bytes of an artifact (or stdout), or why there are none. */
export function artifactBytes(obs: Observation, artifact: string): Buffer | string {
  if (artifact === 'stdout') {
    const { stdout } = obs.exec;
    if (stdout.truncated) return `stdout was truncated at ${stdout.bytes} bytes`;
    return Buffer.from(stdout.headBase64, 'base64');
  }
  const got = obs.artifacts.find((a) => a.path === artifact);
  if (!got || got.kind === 'missing') return `artifact ${artifact} is missing`;
  if (!got.content) return `artifact ${artifact} is not a readable regular file (${got.kind}${got.note ? `: ${got.note}` : ''})`;
  return Buffer.from(got.content);
}

/**
 * The first key that appears twice in one object of a JSON text that JSON.parse accepted, or undefined. JSON.parse
 * keeps the last of two equal keys, so `{"total": 0, "total": 265535}` would read as the right answer.
 */
export function duplicateJsonKey(text: string): string | undefined {
  const stack: (Set<string> | undefined)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(undefined);
    } else if (c === '}' || c === ']') {
      stack.pop();
      expectKey = false;
    } else if (c === ',') {
      expectKey = stack.at(-1) !== undefined;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const keys = stack.at(-1);
        if (keys?.has(key)) return key;
        keys?.add(key);
        expectKey = false;
      }
      i = j;
    }
  }
  return undefined;
}

/** Strict JSON: what JSON.parse refuses (NaN, Infinity, trailing commas, comments) and a key given twice in one object. */
export function parseJson(obs: Observation, artifact: string): { value: unknown } | string {
  const bytes = artifactBytes(obs, artifact);
  if (typeof bytes === 'string') return bytes;
  const text = bytes.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return `${artifact} is not valid JSON`;
  }
  const twice = duplicateJsonKey(text);
  if (twice !== undefined) return `${artifact} gives the key ${JSON.stringify(twice).slice(0, 80)} twice in one object: which value counts is up to the reader`;
  return { value };
}

function at(value: unknown, path: string | undefined): { found: boolean; value: unknown } {
  if (!path) return { found: true, value };
  let cur: unknown = value;
  for (const key of path.split('.')) {
    if (typeof cur !== 'object' || cur === null || !(key in cur)) return { found: false, value: undefined };
    cur = (cur as Record<string, unknown>)[key];
  }
  return { found: true, value: cur };
}

const reject = (reason: string): PredicateResult => ({ accepted: false, reason });
const accept = (reason: string, where: string): PredicateResult => ({ accepted: true, reason, evidence: [outside('completion-predicate', reason, where)] });

function isDeepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === 'object' && v !== null)
    return Object.fromEntries(
      Object.entries(v)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, x]) => [k, canonical(x)]),
    );
  return v;
}

/** RFC 4180 through csv-parse (quoted fields, embedded commas and newlines); a malformed file is a reason. */
export function parseCsv(bytes: Uint8Array): string[][] | string {
  try {
    return parseCsvSync(Buffer.from(bytes), { bom: true, skip_empty_lines: true, relax_column_count: true }) as string[][];
  } catch (err) {
    return `not valid CSV: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** Turns a declarative spec into a function checked outside the box. */
export function compilePredicate(spec: PredicateSpec): (obs: Observation) => PredicateResult {
  switch (spec.type) {
    case 'json-schema': {
      const ajv = new (ajv2020().Ajv2020)({ allErrors: true, strict: false });
      ajvFormats().default(ajv);
      let validate;
      try {
        validate = ajv.compile(spec.schema);
      } catch (err) {
        throw new PredicateError(`invalid JSON Schema: ${err instanceof Error ? err.message : String(err)}`);
      }
      return (obs) => {
        const parsed = parseJson(obs, spec.artifact);
        if (typeof parsed === 'string') return reject(parsed);
        if (!validate(parsed.value)) return reject(`${spec.artifact} does not match its schema: ${ajv.errorsText(validate.errors)}`);
        return accept(`${spec.artifact} matches its JSON Schema`, `artifact:${spec.artifact}`);
      };
    }
    case 'exact':
      return (obs) => {
        if (spec.field === undefined && typeof spec.value === 'string') {
          const bytes = artifactBytes(obs, spec.artifact);
          if (typeof bytes === 'string') return reject(bytes);
          const text = bytes.toString('utf8');
          return text === spec.value
            ? accept(`${spec.artifact} is exactly as expected`, spec.artifact)
            : reject(`${spec.artifact} differs from the expected text (${text.length} vs ${spec.value.length} characters)`);
        }
        const parsed = parseJson(obs, spec.artifact);
        if (typeof parsed === 'string') return reject(parsed);
        const got = at(parsed.value, spec.field);
        const name = spec.field ? `${spec.artifact}:${spec.field}` : spec.artifact;
        if (!got.found) return reject(`${name} is missing`);
        return isDeepEqual(got.value, spec.value)
          ? accept(`${name} equals the expected value`, name)
          : reject(`${name} is ${JSON.stringify(got.value)}, expected ${JSON.stringify(spec.value)}`);
      };
    case 'tolerance':
      return (obs) => {
        const parsed = parseJson(obs, spec.artifact);
        if (typeof parsed === 'string') return reject(parsed);
        const got = at(parsed.value, spec.field);
        const name = `${spec.artifact}:${spec.field}`;
        if (!got.found || typeof got.value !== 'number') return reject(`${name} is not a number`);
        const diff = Math.abs(got.value - spec.expected);
        return diff <= spec.tolerance
          ? accept(`${name} = ${got.value}, within ${spec.tolerance} of ${spec.expected}`, name)
          : reject(`${name} = ${got.value} ≠ expected ${spec.expected} (off by ${diff}, tolerance ${spec.tolerance})`);
      };
    case 'sha256':
      return (obs) => {
        const bytes = artifactBytes(obs, spec.artifact);
        if (typeof bytes === 'string') return reject(bytes);
        const got = createHash('sha256').update(bytes).digest('hex');
        return got === spec.sha256
          ? accept(`${spec.artifact} has sha256 ${got}`, spec.artifact)
          : reject(`${spec.artifact} has sha256 ${got}, expected ${spec.sha256}`);
      };
    case 'csv-shape':
      return (obs) => {
        const bytes = artifactBytes(obs, spec.artifact);
        if (typeof bytes === 'string') return reject(bytes);
        const table = parseCsv(bytes);
        if (typeof table === 'string') return reject(`${spec.artifact} is ${table}`);
        const [header = [], ...rows] = table;
        if (spec.columns && JSON.stringify(header) !== JSON.stringify(spec.columns))
          return reject(`${spec.artifact} has columns ${header.join(',')}, expected ${spec.columns.join(',')}`);
        if (spec.rows !== undefined && rows.length !== spec.rows) return reject(`${spec.artifact} has ${rows.length} data rows, expected ${spec.rows}`);
        const ragged = rows.findIndex((r) => r.length !== header.length);
        if (ragged >= 0) return reject(`${spec.artifact} row ${ragged + 1} has ${rows[ragged]?.length} cells, the header has ${header.length}`);
        return accept(`${spec.artifact} has ${rows.length} rows × ${header.length} columns as expected`, spec.artifact);
      };
    case 'png':
      return (obs) => {
        const bytes = artifactBytes(obs, spec.artifact);
        if (typeof bytes === 'string') return reject(bytes);
        const checked = checkPng(bytes, spec);
        if (typeof checked === 'string') return reject(`${spec.artifact}: ${checked}`);
        return accept(`${spec.artifact} decodes as a ${checked.png.width}×${checked.png.height} PNG with ${checked.colours} distinct colours`, spec.artifact);
      };
    case 'exit-code':
      return (obs) =>
        obs.exec.exitCode === spec.code
          ? accept(`the exit code ${spec.code} came through`, 'exit-status')
          : reject(`exit code ${obs.exec.exitCode ?? obs.exec.signal ?? 'unknown'}, expected ${spec.code}`);
    case 'all': {
      const parts = spec.of.map(compilePredicate);
      return (obs) => {
        const evidence = [];
        for (const part of parts) {
          const r = part(obs);
          if (!r.accepted) return r;
          evidence.push(...(r.evidence ?? []));
        }
        return { accepted: true, reason: `all ${parts.length} checks passed`, evidence };
      };
    }
  }
}
