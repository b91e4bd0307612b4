/**
 * What a chaos script that was itself killed (a CI stopped mid-trial) leaves: its runs journal in a private directory
 * that neither `sandcheck clean` nor any other run reads. Each of its directories names its owner (pid and start
 * time); the next chaos script sweeps those of dead owners like any dead run's journals, then removes them.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { processStartTime, readBootIdSync } from '../core/ownership-journal.js';
import { sweepDeadRuns, type SweepHook } from '../harness/ownership/sweep.js';

export const CHAOS_PREFIX = 'sandcheck-chaos-';
const OWNER_FILE = 'chaos-owner.json';
const OwnerSchema = z.strictObject({ pid: z.number().int().positive(), startTime: z.number().int().nonnegative(), bootId: z.string().max(64) });

/** Names this process as the owner of a chaos directory (its output root or its private journal directory). */
export function markChaosOwner(dir: string): void {
  const owner = { pid: process.pid, startTime: processStartTime(process.pid) ?? 0, bootId: readBootIdSync() };
  writeFileSync(join(dir, OWNER_FILE), `${JSON.stringify(owner)}\n`, { mode: 0o600, flag: 'wx' });
}

function ownerAlive(dir: string): boolean {
  try {
    const owner = OwnerSchema.parse(JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')));
    return owner.bootId === readBootIdSync() && processStartTime(owner.pid) === owner.startTime;
  } catch {
    // No readable owner record: not provably a dead chaos script's, so left alone.
    return true;
  }
}

/** The journals still in a chaos journal directory (its owner file aside). */
export function journalsIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith('.jsonl'))
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

/**
 * Sweeps the chaos directories under `root` whose owner is gone: the dead runs of a journal directory (by their
 * journals, with the backends' sweeps), then the directory once no journal is left in it; an output root at once.
 */
export async function sweepStaleChaos(root: string, hooks: readonly SweepHook[]): Promise<{ removed: string[]; kept: string[] }> {
  const removed: string[] = [];
  const kept: string[] = [];
  const names = (await readdir(root).catch(() => [] as string[])).filter((n) => n.startsWith(CHAOS_PREFIX));
  for (const name of names) {
    const dir = join(root, name);
    if (ownerAlive(dir)) continue;
    const report = await sweepDeadRuns({ dir, hooks });
    removed.push(...report.removed);
    kept.push(...report.kept.map((k) => `${k.what}: ${k.reason}`));
    if (report.kept.length > 0 || journalsIn(dir).length > 0) {
      kept.push(`${dir}: journals left`);
      continue;
    }
    await rm(dir, { recursive: true, force: true });
    removed.push(`chaos directory ${dir}`);
  }
  return { removed, kept };
}
