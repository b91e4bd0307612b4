import { stat } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { join } from 'node:path';
import { readConfigFile } from '../core/config-file.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { loadWaivers } from '../harness/waivers.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { gateReport, type FailOn, type GateRun } from '../reports/gate.js';
import { gateMarkdown, gateText } from '../reports/gate-render.js';
import { appendStepSummary } from '../reports/step-summary.js';
import { validateScorecard } from '../reports/validate.js';

export interface GateOptions {
  base: string;
  head: string;
  waivers?: string;
  markdown?: string;
  json?: boolean;
  /** Security regressions below this severity are reported, not failures (default low). */
  failOn?: FailOn;
  /** Probe or task case ids, categories or policy items left out of the gate. */
  exclude?: readonly string[];
}

const RUN_HINT = 'pass the --out directory of a finished `sandcheck run` (it holds security.json and task.json)';

/** Both cards of one run directory; a missing directory or card, or one that is not a scorecard, is a usage error (exit 3). */
export async function readRunDir(dir: string, role: string): Promise<GateRun> {
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) throw new SandcheckError('USAGE', `${role} ${visibleLine(dir)} is not a directory`, { hint: RUN_HINT });
  const card = async (kind: 'security' | 'task'): Promise<unknown> => {
    const path = join(dir, `${kind}.json`);
    const exists = await stat(path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!exists) throw new SandcheckError('USAGE', `${role} ${visibleLine(dir)} has no ${kind}.json`, { hint: RUN_HINT });
    const doc = await readConfigFile(path);
    const check = validateScorecard(kind, doc);
    if (!check.valid)
      throw new SandcheckError('CONFIG_INVALID', `${visibleLine(path)} is not a sandcheck ${kind} scorecard: ${check.errors.slice(0, 300)}`, {
        hint: RUN_HINT,
      });
    return doc;
  };
  return { dir, security: (await card('security')) as SecurityScorecard, task: (await card('task')) as TaskScorecard };
}

/**
 * `sandcheck compare --base B --head H`: exit 1 on an unwaived regression (a policy field loosened, a claim dropped, a task
 * case or a security verdict at or above --fail-on) or an expired waiver that matched, 0 otherwise.
 */
export async function gateCommand(opts: GateOptions): Promise<number> {
  const waivers = opts.waivers ? await loadWaivers(opts.waivers) : [];
  const base = await readRunDir(opts.base, '--base');
  const head = await readRunDir(opts.head, '--head');
  const report = gateReport(base, head, waivers, undefined, {
    ...(opts.failOn !== undefined ? { failOn: opts.failOn } : {}),
    ...(opts.exclude !== undefined ? { exclude: opts.exclude } : {}),
  });
  process.stdout.write(opts.json ? `${safeJsonStringify(report, 2)}\n` : `${gateText(report)}\n`);
  if (opts.markdown) await writeReportFile(opts.markdown, gateMarkdown(report));
  await appendStepSummary((max) => gateMarkdown(report, max));
  return report.passed ? EXIT.ok : EXIT.unexpected;
}

/** Which mode `compare` runs in: side by side (dirs) or the gate (--base and --head), never a mix. */
export function compareMode(
  dirs: readonly string[],
  opts: { base?: string; head?: string; waivers?: string; json?: boolean; failOn?: string; exclude?: readonly string[] },
): 'gate' | 'side-by-side' {
  const gate = opts.base !== undefined || opts.head !== undefined;
  if (gate && dirs.length > 0)
    throw new SandcheckError('USAGE', 'compare takes either directories (side by side) or --base and --head (the gate), not both', {
      hint: 'sandcheck compare --base out-main/ --head out-pr/',
    });
  if (gate && (opts.base === undefined || opts.head === undefined))
    throw new SandcheckError('USAGE', 'the gate needs both --base and --head', {
      hint: 'sandcheck compare --base out-main/ --head out-pr/ [--waivers waivers.yaml]',
    });
  if (!gate && (opts.waivers !== undefined || opts.json || opts.failOn !== undefined || opts.exclude !== undefined))
    throw new SandcheckError('USAGE', '--waivers, --json, --fail-on and --exclude belong to the gate (--base and --head)', {
      hint: 'sandcheck compare --base out-main/ --head out-pr/ --waivers waivers.yaml',
    });
  if (!gate && dirs.length === 0)
    throw new SandcheckError('USAGE', 'compare needs run directories, or --base and --head', {
      hint: 'sandcheck compare out-a/ out-b/ (side by side) or sandcheck compare --base out-main/ --head out-pr/ (the gate)',
    });
  return gate ? 'gate' : 'side-by-side';
}
