import { join } from 'node:path';
import { readConfigFile } from '../core/config-file.js';
import { SandcheckError } from '../core/errors.js';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { validateScorecard } from './validate.js';

/** One scorecard of a `sandcheck run --out DIR`, validated against its published schema (CONFIG_INVALID when it is not one). */
export async function readCard(dir: string, kind: 'security' | 'task'): Promise<unknown> {
  const doc = await readConfigFile(join(dir, `${kind}.json`));
  const check = validateScorecard(kind, doc);
  if (!check.valid)
    throw new SandcheckError('CONFIG_INVALID', `${join(dir, `${kind}.json`)} is not a sandcheck ${kind} scorecard: ${check.errors.slice(0, 300)}`, {
      hint: 'give the --out directory of a `sandcheck run`',
    });
  return doc;
}

/** Both scorecards of a run's output directory. */
export async function readRunCards(dir: string): Promise<{ security: SecurityScorecard; task: TaskScorecard }> {
  return { security: (await readCard(dir, 'security')) as SecurityScorecard, task: (await readCard(dir, 'task')) as TaskScorecard };
}
