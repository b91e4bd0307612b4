import { mkdir } from 'node:fs/promises';
import { writeReportFile } from './atomic-write.js';
import { dirname } from 'node:path';
import type { SecurityScorecard, TaskScorecard } from '../harness/model/scorecard.js';
import { safeJsonStringify } from './clean-text.js';

export async function writeJsonReport(path: string, card: SecurityScorecard | TaskScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, `${safeJsonStringify(card, 2)}\n`);
}
