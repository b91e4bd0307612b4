import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SecurityScorecard, TaskScorecard } from '../harness/model/scorecard.js';
import { safeJsonStringify } from './clean-text.js';

export async function writeJsonReport(path: string, card: SecurityScorecard | TaskScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${safeJsonStringify(card, 2)}\n`);
}
