import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import type { SecurityScorecard, TaskScorecard } from '../../model/scorecard.js';

/** The compiled CLI, exactly as `npx sandcheck` runs it (npm test builds it first). */
export const CLI = join(packageRoot(), 'dist', 'cli', 'main.js');

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

/** A temp output directory, removed after the test file. */
export async function tempOut(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandcheck-e2e-'));
  made.push(dir);
  return dir;
}

export function sandcheck(args: readonly string[], options: { env?: Record<string, string> } = {}): ResultPromise<{ reject: false; all: true }> {
  return execa(process.execPath, [CLI, ...args], { reject: false, all: true, env: { CI: 'true', ...options.env } });
}

/** Both scorecards a `sandcheck run --out dir` wrote. */
export async function readCards(out: string): Promise<{ security: SecurityScorecard; task: TaskScorecard }> {
  return {
    security: JSON.parse(await readFile(join(out, 'security.json'), 'utf8')) as SecurityScorecard,
    task: JSON.parse(await readFile(join(out, 'task.json'), 'utf8')) as TaskScorecard,
  };
}
