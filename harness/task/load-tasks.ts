import { readdir, realpath } from 'node:fs/promises';
import { basename, isAbsolute, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import { parseDocument } from '../../core/config-file.js';
import type { TaskCase } from '../../model/probe.js';
import { formatIssues } from '../policy-loader.js';
import { CONFIG_FILE_MAX_BYTES, INPUT_FILE_MAX_BYTES, readBoundedFile, readBoundedText } from '../../core/bounded-file.js';
import { visibleLine } from '../../core/clean-text.js';
import { PredicateError, compilePredicate } from '../../probes/_shared/task/predicates.js';
import { PredicateSpecSchema } from '../../probes/_shared/task/predicate-schema.js';
import { DeclaredOutputsSchema } from '../../probes/_shared/task/outputs-schema.js';
import { withDeclaredOutputs } from '../../probes/_shared/task/outputs.js';
import { expectedExitFromSpec, type TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

/** Bounds of a task case: ids and titles reach report names and terminals; everything else is bounded by the file size. */
export const TASK_BOUNDS = {
  idLength: 64,
  titleLength: 200,
  pathLength: 1024,
  sourceLength: CONFIG_FILE_MAX_BYTES,
  listLength: 100,
  attempts: 21,
  caseFiles: 1000,
} as const;
const T = TASK_BOUNDS;
/** A path inside the case's own folder (or the box's work directory): never absolute, never `..`, no NUL. */
const RelPath = () =>
  z
    .string()
    .min(1)
    .max(T.pathLength, { error: `expected a path of at most ${T.pathLength} characters` })
    .refine((p) => !isAbsolute(p) && !p.startsWith('\\'), { error: 'expected a relative path (it stays inside the case folder)' })
    .refine((p) => !p.split(/[\\/]/).includes('..'), { error: 'expected a path without ".." (it stays inside the case folder)' })
    .refine((p) => !p.includes('\u0000'), { error: 'expected a path without NUL characters' });
const Source = () =>
  z
    .string()
    .min(1)
    .max(T.sourceLength, { error: `expected at most ${T.sourceLength} characters` });
export const TaskId = z
  .string()
  .max(T.idLength, { error: `expected an id of at most ${T.idLength} characters` })
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a lowercase id of letters, digits and dashes');
export const TaskTitle = z
  .string()
  .min(1)
  .max(T.titleLength, { error: `expected a title of 1..${T.titleLength} characters` });

const Program = z
  .strictObject({
    program: Source().optional().describe('inline Python 3 source'),
    programFile: RelPath().optional().describe('path of a .py file, relative to the case file'),
  })
  .refine((p) => (p.program === undefined) !== (p.programFile === undefined), { error: 'give exactly one of program or programFile' });

const Input = z
  .strictObject({
    path: RelPath(),
    content: z.string().max(T.sourceLength).optional(),
    file: RelPath().optional().describe('relative to the case file'),
  })
  .refine((i) => (i.content === undefined) !== (i.file === undefined), { error: 'give exactly one of content or file' });

/** A task case as a user writes it in YAML or JSON. */
export const TaskCaseFileSchema = z
  .strictObject({
    id: TaskId,
    title: TaskTitle,
    expected: z.enum(['accept', 'reject']),
    program: Source().optional(),
    programFile: RelPath().optional(),
    attempts: z.array(Program).min(1).max(T.attempts).optional().describe('candidate programs of a correction loop, in order'),
    inputs: z.array(Input).max(T.listLength).default([]),
    stdin: z.string().max(T.sourceLength).optional(),
    artifacts: z.array(RelPath()).max(T.listLength).default([]),
    predicate: PredicateSpecSchema.describe('checked only if the program ended by itself with exit 0, or with the code of an exit-code predicate in it'),
    outputs: DeclaredOutputsSchema.optional().describe(
      'the files the program must leave and nothing else (any other file in the workspace is a rejection), and their text contract; fetched as artifacts too',
    ),
  })
  .refine((c) => [c.program, c.programFile, c.attempts].filter((x) => x !== undefined).length === 1, {
    error: 'give exactly one of program, programFile or attempts',
  })
  .meta({ id: 'sandcheck-task-case', title: 'sandcheck task case' });

export type TaskCaseFile = z.infer<typeof TaskCaseFileSchema>;

/**
 * The real path of `rel` under `folder`, refused when it (or a symlink on the way) leads out of the folder: a case
 * is a folder of its own, and a file it names must not pull another part of the machine into the box or a report.
 */
export async function insideFolder(folder: string, rel: string, what: string): Promise<string> {
  const root = await realpath(folder);
  let real: string;
  try {
    real = await realpath(resolve(folder, rel));
  } catch (err) {
    const code = err !== null && typeof err === 'object' && 'code' in err ? String(err.code) : '';
    throw new SandcheckError(
      'CONFIG_INVALID',
      `${what}: ${code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be resolved (${code || errorMessage(err)})`}`,
    );
  }
  if (real !== root && !real.startsWith(`${root}${sep}`)) {
    throw new SandcheckError('CONFIG_INVALID', `${what}: leads out of the case folder (through a symlink)`, {
      hint: 'copy the file into the folder that holds the task case',
    });
  }
  return real;
}

async function inputFile(base: string, rel: string, what: string): Promise<Buffer> {
  const read = await readBoundedFile(await insideFolder(base, rel, what), INPUT_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `${what}: ${read.message}`);
  return read.bytes;
}

async function programSource(base: string, p: { program?: string | undefined; programFile?: string | undefined }, file: string): Promise<string> {
  if (p.program !== undefined) return p.program;
  const what = `${visibleLine(file)}: programFile ${visibleLine(p.programFile ?? '')}`;
  const read = await readBoundedText(await insideFolder(base, p.programFile ?? '', what), CONFIG_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `${what}: ${read.message}`);
  return read.text;
}

async function fromYaml(dir: string, path: string): Promise<TaskCaseSpec> {
  const file = basename(path);
  const read = await readBoundedText(await insideFolder(dir, file, visibleLine(file)), CONFIG_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `${visibleLine(file)}: ${read.message}`, { hint: 'a task case is a regular YAML or JSON file' });
  const doc = await parseDocument(read.text, file);
  const parsed = TaskCaseFileSchema.safeParse(doc);
  if (!parsed.success) {
    throw new SandcheckError('CONFIG_INVALID', `invalid task case\n${formatIssues(parsed.error, doc, file)}`, {
      hint: 'see reports/schema/task-case.schema.json for the fields of a task case',
    });
  }
  const c = parsed.data;
  const base = resolve(path, '..');
  let predicate;
  try {
    predicate = compilePredicate(c.predicate);
  } catch (err) {
    if (err instanceof PredicateError) throw new SandcheckError('CONFIG_INVALID', `${file}: predicate: ${err.message}`);
    throw err;
  }
  const inputs = await Promise.all(
    c.inputs.map(async (i) => ({
      path: i.path,
      content:
        i.content !== undefined
          ? Buffer.from(i.content)
          : await inputFile(base, i.file ?? '', `${visibleLine(file)}: inputs: ${visibleLine(i.path)}: file ${visibleLine(i.file ?? '')}`),
      readOnly: true,
    })),
  );
  const attempts = c.attempts ? await Promise.all(c.attempts.map(async (a) => ({ source: await programSource(base, a, file) }))) : undefined;
  const source = attempts ? attempts[0]?.source : await programSource(base, c, file);
  const stdin = c.stdin;
  const expectedExit = expectedExitFromSpec(c.predicate);
  return {
    kind: 'task',
    id: c.id,
    title: c.title,
    policyItem: 'task.correctness',
    payload: base,
    ...(source !== undefined ? { source } : {}),
    expected: c.expected,
    origin: file,
    files: () => inputs,
    artifacts: c.outputs ? [...new Set([...c.artifacts, ...c.outputs.files])] : c.artifacts,
    ...(stdin !== undefined ? { stdin: () => Buffer.from(stdin) } : {}),
    ...(attempts ? { attempts } : {}),
    ...(expectedExit !== undefined ? { expectedExit } : {}),
    ...(c.outputs ? { outputs: c.outputs } : {}),
    predicate: c.outputs ? withDeclaredOutputs(c.outputs, predicate) : predicate,
  };
}

function isTaskCase(v: unknown): v is TaskCase {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'task' && typeof (v as { predicate?: unknown }).predicate === 'function';
}

/** A JS module case exports a TaskCase (default or `taskCase`); custom predicate functions live there. */
async function fromModule(dir: string, path: string): Promise<TaskCase> {
  const file = basename(path);
  const real = await insideFolder(dir, file, visibleLine(file));
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(real).href)) as Record<string, unknown>;
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${file}: cannot load: ${errorMessage(err)}`, {
      hint: 'compile TypeScript cases to .mjs first (or run sandcheck through tsx)',
    });
  }
  const c = mod['default'] ?? mod['taskCase'];
  if (!isTaskCase(c)) throw new SandcheckError('CONFIG_INVALID', `${file}: default export: expected a task case with kind "task" and a predicate function`);
  // A module is code, not a document: only its names are checked, by the same bounds as a YAML case.
  const names = z.strictObject({ id: TaskId, title: TaskTitle }).safeParse({ id: c.id, title: c.title });
  if (!names.success) throw new SandcheckError('CONFIG_INVALID', `invalid task case\n${formatIssues(names.error, { id: c.id, title: c.title }, file)}`);
  return { ...c, origin: file };
}

const CASE_FILE = /\.(ya?ml|json|mjs|js|ts)$/;

/** Every task case in a directory (YAML, JSON, or JS/TS modules), sorted by file name. */
export async function loadTaskDir(dir: string): Promise<TaskCase[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => CASE_FILE.test(n)).sort();
    if (names.length > T.caseFiles) throw new Error(`${names.length} case files; the limit is ${T.caseFiles}`);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `--tasks ${dir}: cannot read the directory (${errorMessage(err)})`);
  }
  const cases: TaskCase[] = [];
  for (const name of names) {
    const path = join(dir, name);
    cases.push(/\.(m?js|ts)$/.test(name) ? await fromModule(dir, path) : await fromYaml(dir, path));
  }
  const seen = new Set<string>();
  for (const c of cases) {
    if (seen.has(c.id)) throw new SandcheckError('CONFIG_INVALID', `${c.origin}: id: "${c.id}" is used by another task case`);
    seen.add(c.id);
  }
  return cases;
}
