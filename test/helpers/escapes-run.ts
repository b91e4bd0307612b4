import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '../../model/backend-contract.js';
import type { Policy } from '../../model/policy.js';
import type { SecurityProbe } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';

/**
 * A disk of the test's own: a sparse ext4 image on a loop device it attached, mounted on a temp dir.
 * Runs whose scratch directory (and so their decoys) sit on it have a host disk that even root on a
 * machine that closes its real disk can open; closing detaches exactly this device.
 */
export interface LoopDisk {
  dir: string;
  device: string;
  close(): Promise<void>;
}

export async function openLoopDisk(sizeMb = 2048): Promise<LoopDisk> {
  const base = await mkdtemp(join(tmpdir(), 'sc-escdisk-'));
  const image = join(base, 'disk.img');
  const dir = join(base, 'mnt');
  let device: string;
  try {
    execFileSync('truncate', ['-s', `${sizeMb}M`, image]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', image]);
    execFileSync('mkdir', [dir]);
    device = execFileSync('losetup', ['--find', '--show', image], { encoding: 'utf8' }).trim();
  } catch (err) {
    await rm(base, { recursive: true, force: true });
    throw err;
  }
  try {
    execFileSync('mount', ['-t', 'ext4', device, dir]);
  } catch (err) {
    execFileSync('losetup', ['-d', device]);
    await rm(base, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    device,
    async close() {
      execFileSync('umount', [dir]);
      execFileSync('losetup', ['-d', device]);
      await rm(base, { recursive: true, force: true });
    },
  };
}

/** One run context (its scratch directory, and so its decoys, on `scratchRoot` when given) in an existing lab. */
export function openRunIn(lab: LabSession, runId: string, scratchRoot?: string): Promise<RunContext> {
  return openRunContext(runId, { lab, ...(scratchRoot ? { scratchRoot } : {}) });
}

export function openTestLab(runId: string): Promise<LabSession> {
  return openLab(runId, packageRoot());
}

export async function runProbes(
  run: RunContext,
  backend: Backend,
  policy: Policy,
  probes: readonly SecurityProbe[],
  concurrency = 1,
): Promise<Map<string, SecurityResult>> {
  const { security } = await new Runner({ backend, policy, probes, run, concurrency }).run();
  return new Map(security.map((r) => [r.id, r]));
}

export const explainResult = (r: SecurityResult | undefined): string =>
  r
    ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 300)}`).join('\n  ')}`
    : 'did not run';
