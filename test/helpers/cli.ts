import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { packageRoot } from '../../harness/paths.js';

/** The compiled CLI, exactly as `npx sandcheck` runs it (npm test builds it first). */
export const CLI = join(packageRoot(), 'dist', 'harness', 'cli', 'main.js');

export async function tempOut(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'sandcheck-e2e-'));
}

export function sandcheck(args: readonly string[], options: { env?: Record<string, string> } = {}): ResultPromise<{ reject: false; all: true }> {
  return execa(process.execPath, [CLI, ...args], { reject: false, all: true, env: { CI: 'true', ...options.env } });
}
