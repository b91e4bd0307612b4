import { join } from 'node:path';
import { SandcheckError } from '../core/errors.js';
import type { CardFiles, SecurityScorecard, TaskScorecard, WriteCards } from '../model/scorecard.js';
import { writeJsonReport } from './json-report.js';
import { redactDeep } from './redact.js';
import { writeSarif } from './sarif.js';
import { withThreatMapping } from './threat-mapping.js';
import { validateScorecard } from './validate.js';

export type { CardFiles } from '../model/scorecard.js';

export function cardFiles(dir: string): CardFiles {
  return {
    securityJson: join(dir, 'security.json'),
    taskJson: join(dir, 'task.json'),
    securityJunit: join(dir, 'security.junit.xml'),
    taskJunit: join(dir, 'task.junit.xml'),
    securitySarif: join(dir, 'security.sarif'),
  };
}

/**
 * Redacts real-credential shapes, adds the probes' ATT&CK/CWE ids, validates both cards against the published
 * schemas, writes JUnit, SARIF and JSON. `harnessPeakUntilWritten`: the run writing its own cards raises their
 * harness peak memory to this process's peak as of the JSON write (not for a merge or a recovery, whose process
 * is not the run's).
 */
export const writeScorecards: WriteCards = async function writeScorecards(
  dir: string,
  cards: { security: SecurityScorecard; task: TaskScorecard },
  options: { harnessPeakUntilWritten?: boolean } = {},
): Promise<{ security: SecurityScorecard; task: TaskScorecard; files: CardFiles }> {
  // Anything shaped like a real cloud credential (a live-network run meets real ones) is redacted; run canaries are kept.
  const security = withThreatMapping(redactDeep(cards.security));
  const task = redactDeep(cards.task);
  for (const [kind, card] of [
    ['security', security],
    ['task', task],
  ] as const) {
    const check = validateScorecard(kind, card);
    if (!check.valid) throw new SandcheckError('INTERNAL', `the ${kind} scorecard does not match its published schema: ${check.errors.slice(0, 2000)}`);
  }
  const files = cardFiles(dir);
  // Loaded when the reports are written: the JUnit builder and its lodash take about 20 MB the run itself never needs.
  const { securityJunit, taskJunit, writeJunit } = await import('./junit-report.js');
  await writeJunit(files.securityJunit, securityJunit(security));
  await writeJunit(files.taskJunit, taskJunit(task));
  await writeSarif(files.securitySarif, security);
  if (options.harnessPeakUntilWritten) {
    // The JSON cards go last, carrying the run's peak memory with the other reports built (resourceUsage is in KiB).
    const peak = process.resourceUsage().maxRSS * 1024;
    for (const card of [security, task]) card.run.harness.maxRssBytes = Math.max(card.run.harness.maxRssBytes, peak);
  }
  await writeJsonReport(files.securityJson, security);
  await writeJsonReport(files.taskJson, task);
  return { security, task, files };
};
