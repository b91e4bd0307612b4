import { writeFileSync } from 'node:fs';
import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../../core/errors.js';
import { readNoFollow } from '../../lab/left-in-box.js';

/**
 * Directories the tool makes in a temp directory for each run and leaves there when it is killed (runsc do:
 * /tmp/runsc-do<N>): at destroy, each one whose `file` names this environment's markers (the launcher's
 * SANDCHECK_RUN and SANDCHECK_ENV) is removed. Nothing else under the prefix is touched.
 */
export const ToolTempSchema = z.strictObject({
  dir: z.string().regex(/^\//, { error: 'an absolute path' }).default('/tmp'),
  prefix: z.string().regex(/^[A-Za-z0-9._-]+$/, { error: 'a plain file name prefix' }),
  /** A file in each directory that records the launcher's environment (runsc do: config.json, the box's OCI spec). */
  file: z.string().regex(/^[A-Za-z0-9._-]+$/, { error: 'a plain file name' }),
});
export type ToolTemp = z.output<typeof ToolTempSchema>;

/** In an environment's state root: its tool's temp spec, so that a crash sweep finds what a killed run left. */
const RECORD = 'tool-temp.json';

export function recordToolTemp(envRoot: string, spec: ToolTemp): void {
  writeFileSync(join(envRoot, RECORD), JSON.stringify(spec), { mode: 0o600, flag: 'wx' });
}

export async function readToolTempRecord(envRoot: string): Promise<ToolTemp | undefined> {
  const bytes = await readNoFollow(join(envRoot, RECORD));
  if (bytes === undefined) return undefined;
  try {
    const parsed = ToolTempSchema.safeParse(JSON.parse(bytes.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** `NAME=value` as a whole word: the value may not go on (an environment id is never a prefix of another's). */
const names = (text: string, name: string, value: string): boolean => {
  const needle = `${name}=${value}`;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
    if (!/[A-Za-z0-9_.-]/.test(text.charAt(i + needle.length))) return true;
  }
  return false;
};

/**
 * Removes the tool's directories whose record names this very environment (both markers, as the launcher's
 * environment had them); anything else under the prefix (another run's, a user's) is left alone. Returns
 * the names removed (with dryRun: that would be, and nothing is) and those that could not be, with why.
 */
export async function removeToolTemp(
  spec: ToolTemp,
  markers: Readonly<Record<string, string>>,
  options: { dryRun?: boolean } = {},
): Promise<{ removed: string[]; kept: string[] }> {
  const removed: string[] = [];
  const kept: string[] = [];
  const marks = Object.entries(markers);
  for (const name of await readdir(spec.dir).catch(() => [] as string[])) {
    if (!name.startsWith(spec.prefix)) continue;
    const path = join(spec.dir, name);
    const st = await lstat(path).catch(() => undefined);
    if (!st?.isDirectory() || st.uid !== process.getuid?.()) continue;
    const text = (await readNoFollow(join(path, spec.file)))?.toString('utf8');
    if (text === undefined || !marks.every(([k, v]) => names(text, k, v))) continue;
    try {
      if (!options.dryRun) await rm(path, { recursive: true, force: true });
      removed.push(name);
    } catch (err) {
      kept.push(`${name}: ${errorMessage(err)}`);
    }
  }
  return { removed, kept };
}
