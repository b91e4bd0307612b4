import { join } from 'node:path';
import { writeReportFile } from '../core/atomic-write.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { runHtml } from '../reports/html-run/run-html.js';
import { readRunDir } from './gate-command.js';

/** The page `report --html` and `run --html` write into the run's directory unless told otherwise. */
export const REPORT_HTML = 'report.html';

export interface ReportOptions {
  recover?: string;
  html?: boolean;
  htmlFile?: string;
  base?: string;
}

const HINT = 'sandcheck report out/ --html [--base out-main/] [--html-file page.html], or sandcheck report --recover out/';

/** One run as a page: both cards, what needs a look first with what to do, what changed against --base, a legend. */
export async function writeRunHtml(
  dir: string,
  cards: { security: SecurityScorecard; task: TaskScorecard },
  opts: { file?: string; base?: string } = {},
): Promise<string> {
  const base = opts.base !== undefined ? await readRunDir(opts.base, '--base') : undefined;
  const file = opts.file ?? join(dir, REPORT_HTML);
  await writeReportFile(file, runHtml({ dir, ...cards }, base ? { base } : {}));
  return file;
}

/** `sandcheck report DIR --html` or `sandcheck report --recover DIR`, never both. */
export async function reportCommand(dir: string | undefined, opts: ReportOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  if (opts.recover !== undefined) {
    if (dir !== undefined || opts.html || opts.htmlFile !== undefined || opts.base !== undefined)
      throw new SandcheckError('USAGE', '--recover takes only the directory of the run that did not finish', { hint: HINT });
    return (await import('./recover-command.js')).recoverCommand(opts.recover, out);
  }
  if (dir === undefined || !opts.html)
    throw new SandcheckError('USAGE', dir === undefined ? 'report needs the --out directory of a run' : 'say what to write: --html', { hint: HINT });
  const head = await readRunDir(dir, 'the run directory');
  const file = await writeRunHtml(dir, head, {
    ...(opts.htmlFile !== undefined ? { file: opts.htmlFile } : {}),
    ...(opts.base !== undefined ? { base: opts.base } : {}),
  });
  out.write(`wrote ${file}\n`);
  return EXIT.ok;
}
