import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { SandcheckError, errorMessage } from './errors.js';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from './bounded-file.js';
import { visibleLine } from '../reports/clean-text.js';
import { POLICY_PRESETS, PolicySchema, isPresetName, type Policy } from './model/policy.js';

type PlainObject = Record<string, unknown>;

function isPlainObject(v: unknown): v is PlainObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Objects merge key by key; arrays and scalars in the override replace the base. */
export function deepMerge(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const out: PlainObject = { ...base };
  for (const [k, v] of Object.entries(override)) out[k] = k in base ? deepMerge(base[k], v) : v;
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (!isPlainObject(cur) && !Array.isArray(cur)) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** What a value is, for a message: its kind for the values JSON cannot show, a short cleaned excerpt otherwise. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'not a number';
    if (!Number.isFinite(v)) return v > 0 ? 'infinite' : '-infinite';
    return String(v);
  }
  if (typeof v === 'string') return v.length > 60 ? `a string of ${v.length} characters (${visibleLine(JSON.stringify(v.slice(0, 40)))}…)` : visibleLine(JSON.stringify(v));
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (typeof v === 'object' && v !== null) return 'a mapping';
  return visibleLine(String(JSON.stringify(v)));
}

/** `resources.memoryMb: expected a positive integer, got -1`, one line per issue (at most 20). */
export function formatIssues(error: z.ZodError, input: unknown, source: string): string {
  const lines = error.issues.slice(0, 20).map((issue) => {
    const path = visibleLine(issue.path.map(String).join('.').slice(0, 200)) || '(root)';
    const got = issue.code === 'unrecognized_keys' ? '' : `, got ${describeValue(valueAt(input, issue.path))}`;
    return `${visibleLine(source)}: ${path}: ${visibleLine(issue.message.slice(0, 300))}${got}`;
  });
  if (error.issues.length > 20) lines.push(`${visibleLine(source)}: … and ${error.issues.length - 20} more`);
  return lines.join('\n');
}

export function parsePolicy(input: unknown, source: string): Policy {
  const parsed = PolicySchema.safeParse(input);
  if (!parsed.success) {
    throw new SandcheckError('CONFIG_INVALID', `invalid policy\n${formatIssues(parsed.error, input, source)}`, {
      hint: 'fix the fields named above; a policy file may set `extends: ci | reference` and override only what differs',
    });
  }
  return parsed.data;
}

/** A preset name, or a YAML/JSON file that `extends` a preset (default `reference`). */
export async function loadPolicy(nameOrPath: string): Promise<Policy> {
  if (isPresetName(nameOrPath)) return POLICY_PRESETS[nameOrPath];
  const read = await readBoundedText(nameOrPath, CONFIG_FILE_MAX_BYTES);
  if (!read.ok && (read.reason === 'missing' || read.reason === 'unreadable')) {
    throw new SandcheckError('POLICY_NOT_FOUND', `policy "${visibleLine(nameOrPath)}" is neither a preset nor a readable file (${read.message})`, {
      hint: `use one of: ${Object.keys(POLICY_PRESETS).join(', ')}, or a path to a .yaml/.json policy file`,
    });
  }
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `policy ${visibleLine(nameOrPath)}: ${read.message}`, { hint: 'give a regular YAML or JSON file' });
  const text = read.text;
  let doc: unknown;
  try {
    doc = extname(nameOrPath) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${nameOrPath}: not valid ${extname(nameOrPath) === '.json' ? 'JSON' : 'YAML'}: ${errorMessage(err)}`);
  }
  if (!isPlainObject(doc)) throw new SandcheckError('CONFIG_INVALID', `${nameOrPath}: expected a mapping at the top level`);
  const { extends: base = 'reference', ...rest } = doc;
  if (typeof base !== 'string' || !isPresetName(base)) {
    throw new SandcheckError('CONFIG_INVALID', `${nameOrPath}: extends: expected one of ${Object.keys(POLICY_PRESETS).join(', ')}, got ${JSON.stringify(base)}`);
  }
  const merged = deepMerge({ ...POLICY_PRESETS[base], name: rest['name'] ?? `${base}+${nameOrPath.split('/').pop() ?? 'file'}` }, rest);
  return parsePolicy(merged, nameOrPath);
}
