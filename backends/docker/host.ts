import { readFile } from 'node:fs/promises';
import type { Owner } from '../shared/process-owner.js';

/** What the docker backend alone reads from the host's /proc, and its owner label (the rest: ../shared/). */

export async function cmdlineOf(pid: number): Promise<string[] | undefined> {
  try {
    const raw = await readFile(`/proc/${pid}/cmdline`);
    return raw
      .toString('utf8')
      .split('\0')
      .filter((a, i, all) => a !== '' || i < all.length - 1);
  } catch {
    return undefined;
  }
}

/** The `sandcheck.owner` label: `<pid>/<start time>/<boot id>`. */
export const formatOwner = (o: Owner): string => `${o.pid}/${o.startTime}/${o.bootId}`;

export function parseOwner(text: string | undefined): Owner | undefined {
  const m = /^(\d+)\/(\d+)\/([0-9a-f-]+|unknown)$/.exec(text ?? '');
  if (!m) return undefined;
  return { pid: Number(m[1]), startTime: Number(m[2]), bootId: m[3] ?? '' };
}
