import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { makeCanaries, plantDecoyFiles, type CanarySet } from '../lab/canaries.js';

export const RUN_MARKER = 'SANDCHECK_RUN';

/** Short, lowercase, safe in namespace, cgroup and container names. */
export function newRunId(): string {
  return `r${randomBytes(5).toString('hex')}`;
}

export interface RunContext {
  runId: string;
  scratchDir: string;
  decoyDir: string;
  canaries: CanarySet;
  controllerEnv: Record<string, string>;
  dispose(): Promise<void>;
}

/** The run's own corner of the host: scratch directory, decoy secret files, decoy credentials. */
export async function openRunContext(runId: string, scratchRoot = tmpdir()): Promise<RunContext> {
  const scratchDir = await mkdtemp(join(scratchRoot, `sandcheck-${runId}-`));
  const decoyDir = join(scratchDir, 'decoy-home');
  const canaries = makeCanaries();
  await plantDecoyFiles(decoyDir, canaries);
  return {
    runId,
    scratchDir,
    decoyDir,
    canaries,
    controllerEnv: { ...canaries.env, [RUN_MARKER]: runId },
    dispose: () => rm(scratchDir, { recursive: true, force: true }),
  };
}
