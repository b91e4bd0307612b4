import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';

/** The system's binary directories, system ones first. */
export const BIN_DIRS: readonly string[] = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin', '/usr/local/sbin'];

/** The first executable `name` in `dirs`, in order (never the caller's PATH). */
export async function findBinary(name: string, dirs: readonly string[] = BIN_DIRS): Promise<string | undefined> {
  for (const d of dirs) {
    const p = join(d, name);
    try {
      await access(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}
