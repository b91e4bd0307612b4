import { mkdir } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname } from 'node:path';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { safeJsonStringify } from '../core/clean-text.js';

export async function writeJsonReport(path: string, card: SecurityScorecard | TaskScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, `${safeJsonStringify(card, 2)}\n`);
}
