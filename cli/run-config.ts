import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument as parseYamlDocument } from 'yaml';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from '../core/bounded-file.js';
import { visibleLine } from '../core/clean-text.js';
import { parseDocument } from '../core/config-file.js';
import { SandcheckError } from '../core/errors.js';
import { isPresetName } from '../model/policy.js';
import { RUN_CONFIG_FILE, RUN_DEFAULTS, RunFileSchema, type RunConfigRecord, type RunFile } from '../model/run-options.js';
import type { RunCommandOptions } from './run-command.js';

/** `sandcheck run` reads its options from sandcheck.yaml (or --config FILE): flags > file > defaults. */

/** A refused sandcheck.yaml: where in the file (line, column, key path), never what the file says there. */
export class RunConfigError extends SandcheckError {
  constructor(
    readonly file: string,
    readonly place: string,
    message: string,
    hint?: string,
  ) {
    super('CONFIG_INVALID', `${file}: ${place}: ${message}`, hint ? { hint } : {});
    this.name = 'RunConfigError';
  }
}

/** Flags that stay flags: named when the file holds them (they are known words, not the file's text). */
const FLAG_ONLY = ['live-network', 'skip-adapter-check', 'certify', 'shard', 'witness', 'config', 'no-config'] as const;
const KEYS = Object.keys(RunFileSchema.shape);

export type RunFlags = Partial<RunCommandOptions> & { config?: string | boolean };

const ordinal = (n: number): string =>
  `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`;

/** Line and column of the node at `path` (a key when `key` is set) in a YAML text; undefined for JSON or when not found. */
function positionOf(text: string, json: boolean, path: readonly PropertyKey[], key?: string): string | undefined {
  if (json) return undefined;
  const counter = new LineCounter();
  const doc = parseYamlDocument(text, { lineCounter: counter });
  const parentPath = path.filter((p): p is string | number => typeof p !== 'symbol');
  let offset: number | undefined;
  if (key !== undefined) {
    const map = parentPath.length ? doc.getIn(parentPath, true) : doc.contents;
    if (isMap(map)) {
      const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      offset = isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
    }
  } else {
    const node = doc.getIn(parentPath, true);
    offset = node !== null && typeof node === 'object' && 'range' in node && Array.isArray(node.range) ? (node.range[0] as number) : undefined;
  }
  if (offset === undefined) return undefined;
  const pos = counter.linePos(offset);
  return `line ${pos.line}, column ${pos.col}`;
}

const pathText = (path: readonly PropertyKey[]): string =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('') || 'the top level';

/** Checks a parsed sandcheck.yaml against its schema; every refusal names its place. */
export function checkRunFile(doc: unknown, file: string, text = ''): RunFile {
  const json = file.endsWith('.json');
  if (doc === null || doc === undefined) return {};
  const parsed = RunFileSchema.safeParse(doc);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (!issue) throw new RunConfigError(file, 'the top level', 'not a valid sandcheck run file');
  const hint = `the keys are: ${KEYS.join(', ')} (docs/cli.md#sandcheckyaml)`;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const inMap = issue.path.length === 0 && doc !== null && typeof doc === 'object' ? Object.keys(doc).indexOf(key) + 1 : 0;
    const where = positionOf(text, json, issue.path, key) ?? (inMap ? `the ${ordinal(inMap)} key at ${pathText(issue.path)}` : pathText(issue.path));
    const known = (FLAG_ONLY as readonly string[]).includes(key);
    throw new RunConfigError(
      file,
      where,
      known ? `${key} is accepted only as a flag on the command line, never from a file` : 'a key sandcheck run does not know',
      known ? `give --${key} on the command line` : hint,
    );
  }
  if (issue.path.length === 0) throw new RunConfigError(file, 'the top level', 'expected a mapping of run options', hint);
  const where = positionOf(text, json, issue.path);
  throw new RunConfigError(file, `${where ? `${where}, ` : ''}${pathText(issue.path)}`, issue.message, hint);
}

/** A value of a path key, taken relative to the file's directory and written relative to the working directory. */
function fromFileDir(value: string, fileDir: string, cwd: string): string {
  if (isAbsolute(value)) return value;
  return normalize(join(relative(cwd, fileDir) || '.', value));
}

/** The file's keys as run options (camelCase), paths taken relative to the file. */
export function fileOptions(file: RunFile, fileDir: string, cwd: string): Partial<RunCommandOptions> {
  const p = (v: string | undefined): string | undefined => (v === undefined ? undefined : fromFileDir(v, fileDir, cwd));
  const policy = file.policy === undefined || isPresetName(file.policy) ? file.policy : p(file.policy);
  // A module path (./adapter.mjs) is a path; a name, preset:NAME or rpc:<command> is not.
  const backend = file.backend !== undefined && /^\.\.?\//.test(file.backend) ? p(file.backend) : file.backend;
  const out: Partial<RunCommandOptions> = {
    backend,
    backendConfig: p(file['backend-config']),
    policy,
    out: p(file.out),
    only: file.only,
    tasks: p(file.tasks),
    image: file.image,
    dockerSocket: p(file['docker-socket']),
    watchDaemon: file['watch-daemon']?.map((s) => fromFileDir(s, fileDir, cwd)),
    exporter: file.exporter,
    concurrency: file.concurrency,
    trustClaims: file['trust-claims'],
    waivers: p(file.waivers),
    label: file.label,
    html: file.html,
    json: file.json,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

const defined = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

const camel = (key: string): string => key.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** flags > file > defaults. */
export function mergeRunOptions(flags: Partial<RunCommandOptions>, file: Partial<RunCommandOptions>): RunCommandOptions {
  return { ...RUN_DEFAULTS, ...file, ...defined(flags) };
}

/** Which file to read: --no-config none, --config FILE that one (it must exist), else sandcheck.yaml in cwd when there is one. */
async function chooseFile(config: string | boolean | undefined, cwd: string): Promise<string | undefined> {
  if (config === false) return undefined;
  if (typeof config === 'string') return resolve(cwd, config);
  const path = join(cwd, RUN_CONFIG_FILE);
  const found = await lstat(path).then(
    () => true,
    (err: NodeJS.ErrnoException) => err.code !== 'ENOENT',
  );
  return found ? path : undefined;
}

/** The options `sandcheck run` runs with, and the record of the file they came from (for the cards). */
export async function resolveRunOptions(flags: RunFlags, cwd = process.cwd()): Promise<RunCommandOptions> {
  const { config, ...given } = flags;
  const path = await chooseFile(config, cwd);
  if (path === undefined) return mergeRunOptions(given, {});
  const rel = relative(cwd, path);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  // Errors name the file as the user named it (or its base name), never an absolute machine path.
  const shown = visibleLine(typeof config === 'string' ? config : inside ? rel : basename(path));
  const read = await readBoundedText(path, CONFIG_FILE_MAX_BYTES);
  if (!read.ok)
    throw new SandcheckError('CONFIG_INVALID', `cannot read ${shown}: it ${read.message}`, { hint: 'give a regular YAML or JSON file, or --no-config' });
  const file = checkRunFile(await parseDocument(read.text, path), shown, read.text);
  const fromFile = fileOptions(file, dirname(path), cwd);
  const setKeys = Object.keys(file);
  const givenKeys = new Set(Object.keys(defined(given)));
  const record: RunConfigRecord = {
    ...(inside ? { file: rel.slice(0, 256) } : {}),
    sha256: createHash('sha256').update(read.text).digest('hex'),
    keys: setKeys.filter((k) => !givenKeys.has(camel(k))),
    overridden: setKeys.filter((k) => givenKeys.has(camel(k))),
  };
  return { ...mergeRunOptions(given, fromFile), runConfig: record };
}
