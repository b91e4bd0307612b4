import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Descriptions of the decoy keys a run puts in the kernel keyring (lab/host-decoys.ts). */
export { DECOY_KEY_DESCRIPTION } from '../core/ownership-journal.js';

export interface ListedKey {
  serial: number;
  description: string;
}

/** The keys /proc/keys shows this process whose description starts with `prefix`. */
export function listKeys(prefix: string): ListedKey[] {
  let text: string;
  try {
    text = readFileSync('/proc/keys', 'utf8');
  } catch {
    return [];
  }
  const found: ListedKey[] = [];
  for (const line of text.split('\n')) {
    // serial flags usage timeout perm uid gid type description: summary
    const m = /^([0-9a-f]+)\s+\S+\s+\d+\s+\S+\s+[0-9a-f]+\s+\d+\s+\d+\s+\S+\s+(.*)$/.exec(line);
    if (!m?.[1] || m[2] === undefined) continue;
    const rest = m[2];
    if (!rest.startsWith(prefix)) continue;
    const end = rest.lastIndexOf(': ');
    found.push({ serial: parseInt(m[1], 16), description: end > 0 ? rest.slice(0, end) : rest });
  }
  return found;
}

// Node has no keyctl; python3 is already what the decoys run on, found on a fixed PATH as theirs is (a shell's shim, pyenv's, runs ~240 processes per call).
const INVALIDATE = [
  'import ctypes, platform, sys',
  'nr = {"x86_64": 250, "aarch64": 219}.get(platform.machine())',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'bad = 0',
  'for s in sys.argv[1:]:',
  '    if nr is None or libc.syscall(ctypes.c_long(nr), ctypes.c_long(21), ctypes.c_long(int(s))) != 0:',
  '        bad += 1',
  'sys.exit(1 if bad else 0)',
].join('\n');

/**
 * Invalidates the keys whose description starts with `prefix` (KEYCTL_INVALIDATE: the kernel drops them from
 * every keyring at once), then waits, bounded, for its garbage collector to stop listing them.
 * Returns the descriptions still listed after `waitMs`.
 */
export async function invalidateKeys(prefix: string, waitMs = 5000): Promise<string[]> {
  const keys = listKeys(prefix);
  if (keys.length > 0)
    spawnSync('python3', ['-c', INVALIDATE, ...keys.map((k) => String(k.serial))], {
      timeout: 10_000,
      stdio: 'ignore',
      env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    });
  const end = Date.now() + waitMs;
  for (;;) {
    const left = listKeys(prefix);
    if (left.length === 0 || Date.now() >= end) return left.map((k) => k.description);
    await sleep(50);
  }
}
