import { mkdir, stat } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname, join, resolve } from 'node:path';
import { describeBackends, isBuiltinBackend, loadBackend } from '../backends/registry.js';
import { selectProbes } from '../suites/index.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { buildMatrix, type MatrixInput, type MatrixReport } from '../reports/matrix-model.js';
import { matrixHtml } from '../reports/matrix-html.js';
import { matrixMarkdown } from '../reports/matrix-markdown.js';
import { checkOutDir, createOutDir } from '../core/out-dir.js';
import { readRunCards } from '../reports/read-cards.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import { packageRoot } from '../core/paths.js';
import { loadPolicy } from '../harness/policy-loader.js';
import { loadTaskDir } from '../harness/task/load-tasks.js';
import { runCommand } from './run-command.js';

export interface MatrixCommandOptions {
  out: string;
  backend?: string[];
  policy: string;
  only?: string[];
  tasks?: string;
  concurrency?: number;
  /** Also render matrix.html to this PNG in headless chromium (docs/matrix-example.png is made so). */
  png?: string;
  pngSize?: { width: number; height: number };
}

/** --png needs chromium and a directory to write into: checked before anything runs. */
async function checkPng(png: string): Promise<void> {
  const { CHROMIUM_INSTALL, findChromium } = await import('../reports/matrix-screenshot.js');
  if (!(await findChromium()))
    throw new SandcheckError('USAGE', '--png renders matrix.html in headless chromium, which is not installed', { hint: CHROMIUM_INSTALL });
  const dir = dirname(resolve(png));
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) throw new SandcheckError('USAGE', `--png ${visibleLine(png)}: its directory does not exist`);
}

/** `--backend a,b,c` (and repeated flags) as one list, in order, without repeats. */

/** A name that is neither built in nor `rpc:` must load as a module adapter before anything runs (a typo is a usage error, not a column). */
async function checkBackendNames(backends: readonly string[]): Promise<void> {
  for (const name of backends) {
    if (isBuiltinBackend(name) || name.startsWith('rpc:')) continue;
    const backend = await loadBackend(name);
    await backend.dispose?.();
  }
}

/** A file-system-safe directory name for a backend's run (module paths and rpc commands hold slashes and spaces). */
export const runDirName = (backend: string): string =>
  backend
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 100) || 'backend';

/** A matrix is shared: where sandcheck is installed on this machine is written as `<sandcheck>`. */
const shareable = (text: string): string => text.replaceAll(packageRoot(), '<sandcheck>');
const installOf = (backend: string): string =>
  shareable(describeBackends().find((b) => b.name === backend)?.install ?? `see \`sandcheck doctor --backend ${backend}\``);

/** Runs one backend as `sandcheck run` would, into dir; a backend this machine cannot run becomes an unavailable column. */
async function runOne(backend: string, dir: string, opts: MatrixCommandOptions): Promise<{ input: MatrixInput; code: number }> {
  try {
    const code = await runCommand({
      backend,
      policy: opts.policy,
      out: dir,
      concurrency: opts.concurrency,
      exporter: 'reference',
      ...(opts.only ? { only: opts.only } : {}),
      ...(opts.tasks ? { tasks: opts.tasks } : {}),
    });
    // An interrupted run still wrote its cards (marked interrupted, incomplete): they are a column too.
    const cards = await readRunCards(dir).catch((err: unknown) => {
      if (code === EXIT.interrupted) return undefined;
      throw err;
    });
    if (!cards)
      return { input: { kind: 'unavailable', source: dir, backend, reason: 'interrupted before its run wrote scorecards', install: installOf(backend) }, code };
    return { input: { kind: 'cards', source: dir, ...cards }, code };
  } catch (err) {
    // Policy, selection and names were checked before the first run: what fails now is this backend on this machine.
    if (!(err instanceof SandcheckError) || err.code === 'INTERNAL') throw err;
    process.stderr.write(`${err.format()}\n`);
    return {
      input: {
        kind: 'unavailable',
        source: dir,
        backend,
        reason: shareable(`${err.code}: ${err.message}${err.hint ? ` (${err.hint})` : ''}`),
        install: installOf(backend),
      },
      code: EXIT.inconclusive,
    };
  }
}

export async function writeMatrix(outDir: string, matrix: MatrixReport): Promise<{ json: string; markdown: string; html: string }> {
  const files = { json: join(outDir, 'matrix.json'), markdown: join(outDir, 'matrix.md'), html: join(outDir, 'matrix.html') };
  await writeReportFile(files.json, `${safeJsonStringify(matrix, 2)}\n`);
  await writeReportFile(files.markdown, matrixMarkdown(matrix));
  await writeReportFile(files.html, matrixHtml(matrix));
  return files;
}

/** Each backend in turn into OUT/runs/<name>; once interrupted, the rest are columns marked not run. */
async function runBackends(backends: readonly string[], opts: MatrixCommandOptions, stop: { interrupted: boolean }): Promise<MatrixInput[]> {
  const inputs: MatrixInput[] = [];
  const usedDirs = new Set<string>();
  for (const backend of backends) {
    let name = runDirName(backend);
    while (usedDirs.has(name)) name = `${name}_`;
    usedDirs.add(name);
    const dir = join(opts.out, 'runs', name);
    if (stop.interrupted) {
      inputs.push({ kind: 'unavailable', source: dir, backend, reason: 'not run: the matrix was interrupted', install: installOf(backend) });
      continue;
    }
    await mkdir(dir, { recursive: true });
    process.stderr.write(`matrix: running ${visibleLine(backend)} into ${dir}\n`);
    const one = await runOne(backend, dir, opts);
    inputs.push(one.input);
    if (one.code === EXIT.interrupted) stop.interrupted = true;
  }
  return inputs;
}

/**
 * `sandcheck matrix [DIR…] [--backend a,b] --out OUT`: earlier runs' output directories and fresh runs
 * (each into OUT/runs/<backend>) side by side in matrix.md, matrix.html and matrix.json.
 * Exit 0 when every column ran and finished; 2 when a backend was unavailable or a run incomplete;
 * 130 when interrupted (the matrix of what exists is still written); 3 for usage errors.
 */
export async function matrixCommand(dirs: readonly string[], opts: MatrixCommandOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const backends = opts.backend ?? [];
  if (dirs.length === 0 && backends.length === 0) {
    throw new SandcheckError('USAGE', 'nothing to put side by side', {
      hint: 'give the --out directories of earlier runs (sandcheck matrix out/a out/b --out M) and/or --backend process,bwrap',
    });
  }
  // Every input is checked before the first backend starts, and a refused command creates nothing.
  if (opts.png !== undefined) await checkPng(opts.png);
  const checked = await checkOutDir(opts.out);
  const inputs: MatrixInput[] = [];
  for (const dir of dirs) inputs.push({ kind: 'cards', source: dir, ...(await readRunCards(dir)) });
  if (backends.length > 0) {
    await loadPolicy(opts.policy);
    selectProbes(opts.only, opts.tasks ? await loadTaskDir(opts.tasks) : []);
    await checkBackendNames(backends);
  }
  await createOutDir(checked, (m) => process.stderr.write(`${m}\n`));
  // A signal (each run also catches its own) stops the runs still to come; the matrix of what exists is written.
  const stop = { interrupted: false };
  const onSignal = (): void => {
    stop.interrupted = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    inputs.push(...(await runBackends(backends, opts, stop)));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const interrupted = stop.interrupted;
  const matrix = buildMatrix(inputs);
  const files = await writeMatrix(opts.out, matrix);
  for (const c of matrix.columns)
    out.write(
      `${c.header}: ${c.score}${c.falseClaims ? ` · FALSE CLAIMS ${c.falseClaims}` : ''}${c.status === 'unavailable' ? ` (${c.unavailable?.reason ?? ''}; install: ${c.unavailable?.install ?? ''})` : ''}\n`,
    );
  out.write(`matrix: ${files.markdown}, ${files.html}, ${files.json}\n`);
  if (opts.png !== undefined) {
    const { screenshot } = await import('../reports/matrix-screenshot.js');
    try {
      const shot = await screenshot(files.html, opts.png, opts.pngSize);
      out.write(`matrix picture: ${opts.png} (${shot.bytes} bytes)\n`);
    } catch (err) {
      throw new SandcheckError('REPORT_WRITE_FAILED', `--png ${visibleLine(opts.png)}: ${visibleLine(err instanceof Error ? err.message : String(err))}`, {
        hint: `the matrix itself is written: ${files.html}`,
        cause: err,
      });
    }
  }
  if (interrupted) return EXIT.interrupted;
  return matrix.columns.some((c) => c.status === 'unavailable' || c.incomplete) ? EXIT.inconclusive : EXIT.ok;
}
