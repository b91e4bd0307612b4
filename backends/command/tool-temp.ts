import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readNoFollow } from '../../harness/left-in-box.js';

/** A tool's own per-run directories in a temp directory (runsc do: /tmp/runsc-do<N>), left behind when it is killed. */
export interface ToolTemp {
  dir: string;
  prefix: string;
  /** A file in each directory that records the launcher's environment (runsc do: config.json, the box's OCI spec). */
  file: string;
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
 * the names removed.
 */
export async function removeToolTemp(spec: ToolTemp, markers: Readonly<Record<string, string>>): Promise<string[]> {
  const removed: string[] = [];
  const marks = Object.entries(markers);
  for (const name of await readdir(spec.dir).catch(() => [] as string[])) {
    if (!name.startsWith(spec.prefix)) continue;
    const path = join(spec.dir, name);
    const st = await lstat(path).catch(() => undefined);
    if (!st?.isDirectory() || st.uid !== process.getuid?.()) continue;
    const text = (await readNoFollow(join(path, spec.file)))?.toString('utf8');
    if (text === undefined || !marks.every(([k, v]) => names(text, k, v))) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
