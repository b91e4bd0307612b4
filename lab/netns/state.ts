import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/** Where each lab records who owns it; /run is a tmpfs, so records die with the boot like the namespaces do. */
export const LAB_STATE_DIR = '/run/sandcheck/labs';

export const LabOwnershipSchema = z.strictObject({
  version: z.literal(1),
  name: z.string(),
  runId: z.string(),
  ownerPid: z.number().int().positive(),
  ownerStartTime: z.number().int().nonnegative(),
  bootId: z.string(),
  createdAt: z.string(),
});
export type LabOwnership = z.infer<typeof LabOwnershipSchema>;

export function stateFileFor(name: string, dir = LAB_STATE_DIR): string {
  return join(dir, `${name}.json`);
}

/** Per-lab files (resolv.conf, …); beside the record so a sweep finds them without the owner. */
export function scratchDirFor(name: string, dir = LAB_STATE_DIR): string {
  return join(dir, name);
}

/**
 * Creates the record exclusively: it doubles as the claim on the name, so two runs with the same id cannot
 * both proceed. Returns `false` when a record already exists.
 */
export async function claimOwnership(record: LabOwnership, dir = LAB_STATE_DIR): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  try {
    await writeFile(stateFileFor(record.name, dir), `${JSON.stringify(record)}\n`, { mode: 0o644, flag: 'wx' });
    return true;
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'EEXIST') return false;
    throw err;
  }
}

/** The record, `undefined` if there is none, or `'invalid'` if the file cannot be trusted. */
export async function readOwnership(name: string, dir = LAB_STATE_DIR): Promise<LabOwnership | 'invalid' | undefined> {
  let text: string;
  try {
    text = await readFile(stateFileFor(name, dir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = LabOwnershipSchema.safeParse(JSON.parse(text));
    return parsed.success && parsed.data.name === name ? parsed.data : 'invalid';
  } catch {
    return 'invalid';
  }
}

/** Removes the record and the lab's scratch dir. */
export async function removeOwnership(name: string, dir = LAB_STATE_DIR): Promise<void> {
  await rm(scratchDirFor(name, dir), { recursive: true, force: true });
  await rm(stateFileFor(name, dir), { force: true });
}

export async function listOwnershipNames(dir = LAB_STATE_DIR): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length));
  } catch {
    return [];
  }
}
