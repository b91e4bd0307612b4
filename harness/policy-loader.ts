import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { SandcheckError, errorMessage } from './errors.js';
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

/** `resources.memoryMb: expected a positive integer, got -1`, one line per issue. */
export function formatIssues(error: z.ZodError, input: unknown, source: string): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.') || '(root)';
      const got = issue.code === 'unrecognized_keys' ? '' : `, got ${JSON.stringify(valueAt(input, issue.path)) ?? 'nothing'}`;
      return `${source}: ${path}: ${issue.message}${got}`;
    })
    .join('\n');
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
  let text: string;
  try {
    text = await readFile(nameOrPath, 'utf8');
  } catch (err) {
    throw new SandcheckError('POLICY_NOT_FOUND', `policy "${nameOrPath}" is neither a preset nor a readable file (${errorMessage(err)})`, {
      hint: `use one of: ${Object.keys(POLICY_PRESETS).join(', ')}, or a path to a .yaml/.json policy file`,
    });
  }
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
