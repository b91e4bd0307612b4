import { SandcheckError } from '../core/errors.js';
import { parseDocument } from '../core/config-file.js';
import { describeValue, formatIssues } from '../core/config-issues.js';

export { describeValue, formatIssues } from '../core/config-issues.js';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from '../core/bounded-file.js';
import { visibleLine } from '../core/clean-text.js';
import { POLICY_PRESETS, PolicySchema, isPresetName, type Policy } from '../model/policy.js';

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
  const doc = await parseDocument(read.text, nameOrPath);
  if (!isPlainObject(doc)) throw new SandcheckError('CONFIG_INVALID', `${visibleLine(nameOrPath)}: expected a mapping at the top level`);
  const { extends: base = 'reference', ...rest } = doc;
  if (typeof base !== 'string' || !isPresetName(base)) {
    throw new SandcheckError(
      'CONFIG_INVALID',
      `${visibleLine(nameOrPath)}: extends: expected one of ${Object.keys(POLICY_PRESETS).join(', ')}, got ${describeValue(base)}`,
    );
  }
  const merged = deepMerge({ ...POLICY_PRESETS[base], name: rest['name'] ?? `${base}+${nameOrPath.split('/').pop() ?? 'file'}` }, rest);
  return parsePolicy(merged, nameOrPath);
}
