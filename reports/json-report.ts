import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SecurityScorecard, TaskScorecard } from '../harness/model/scorecard.js';

export async function writeJsonReport(path: string, card: SecurityScorecard | TaskScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(card, null, 2)}\n`);
}
