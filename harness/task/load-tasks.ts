import { readdir, readFile } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { SandcheckError, errorMessage } from '../errors.js';
import type { TaskCase } from '../model/probe.js';
import { formatIssues } from '../policy-loader.js';
import { PredicateError, PredicateSpecSchema, compilePredicate } from './predicates.js';

const Program = z
  .strictObject({
    program: z.string().min(1).optional().describe('inline Python 3 source'),
    programFile: z.string().min(1).optional().describe('path of a .py file, relative to the case file'),
  })
  .refine((p) => (p.program === undefined) !== (p.programFile === undefined), { error: 'give exactly one of program or programFile' });

const Input = z
  .strictObject({
    path: z.string().min(1),
    content: z.string().optional(),
    file: z.string().min(1).optional().describe('relative to the case file'),
  })
  .refine((i) => (i.content === undefined) !== (i.file === undefined), { error: 'give exactly one of content or file' });

/** A task case as a user writes it in YAML or JSON. */
export const TaskCaseFileSchema = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a lowercase id of letters, digits and dashes'),
    title: z.string().min(1),
    expected: z.enum(['accept', 'reject']),
    program: z.string().min(1).optional(),
    programFile: z.string().min(1).optional(),
    attempts: z.array(Program).min(1).optional().describe('candidate programs of a correction loop, in order'),
    inputs: z.array(Input).default([]),
    stdin: z.string().optional(),
    artifacts: z.array(z.string().min(1)).default([]),
    predicate: PredicateSpecSchema,
  })
  .refine((c) => [c.program, c.programFile, c.attempts].filter((x) => x !== undefined).length === 1, {
    error: 'give exactly one of program, programFile or attempts',
  })
  .meta({ id: 'sandcheck-task-case', title: 'sandcheck task case' });

export type TaskCaseFile = z.infer<typeof TaskCaseFileSchema>;

async function programSource(base: string, p: { program?: string | undefined; programFile?: string | undefined }, file: string): Promise<string> {
  if (p.program !== undefined) return p.program;
  const path = resolve(base, p.programFile ?? '');
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${file}: programFile ${p.programFile}: cannot read (${errorMessage(err)})`);
  }
}

async function fromYaml(path: string): Promise<TaskCase> {
  const file = basename(path);
  let doc: unknown;
  try {
    const text = await readFile(path, 'utf8');
    doc = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${file}: cannot parse: ${errorMessage(err)}`);
  }
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
      content: i.content !== undefined ? Buffer.from(i.content) : await readFile(resolve(base, i.file ?? '')).catch((err: unknown) => {
        throw new SandcheckError('CONFIG_INVALID', `${file}: inputs: ${i.path}: cannot read ${i.file} (${errorMessage(err)})`);
      }),
      readOnly: true,
    })),
  );
  const attempts = c.attempts ? await Promise.all(c.attempts.map(async (a) => ({ source: await programSource(base, a, file) }))) : undefined;
  const source = attempts ? attempts[0]?.source : await programSource(base, c, file);
  const stdin = c.stdin;
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
    artifacts: c.artifacts,
    ...(stdin !== undefined ? { stdin: () => Buffer.from(stdin) } : {}),
    ...(attempts ? { attempts } : {}),
    predicate,
  };
}

function isTaskCase(v: unknown): v is TaskCase {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'task' && typeof (v as { predicate?: unknown }).predicate === 'function';
}

/** A JS module case exports a TaskCase (default or `taskCase`); custom predicate functions live there. */
async function fromModule(path: string): Promise<TaskCase> {
  const file = basename(path);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${file}: cannot load: ${errorMessage(err)}`, { hint: 'compile TypeScript cases to .mjs first (or run sandcheck through tsx)' });
  }
  const c = mod['default'] ?? mod['taskCase'];
  if (!isTaskCase(c)) throw new SandcheckError('CONFIG_INVALID', `${file}: default export: expected a task case with kind "task" and a predicate function`);
  return { ...c, origin: file };
}

const CASE_FILE = /\.(ya?ml|json|mjs|js|ts)$/;

/** Every task case in a directory (YAML, JSON, or JS/TS modules), sorted by file name. */
export async function loadTaskDir(dir: string): Promise<TaskCase[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => CASE_FILE.test(n)).sort();
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `--tasks ${dir}: cannot read the directory (${errorMessage(err)})`);
  }
  const cases: TaskCase[] = [];
  for (const name of names) {
    const path = join(dir, name);
    cases.push(/\.(m?js|ts)$/.test(name) ? await fromModule(path) : await fromYaml(path));
  }
  const seen = new Set<string>();
  for (const c of cases) {
    if (seen.has(c.id)) throw new SandcheckError('CONFIG_INVALID', `${c.origin}: id: "${c.id}" is used by another task case`);
    seen.add(c.id);
  }
  return cases;
}
