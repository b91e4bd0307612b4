import { procBytes } from '../core/proc-files.js';
import { findProcessesWithCmdline } from '../lab/process-scan.js';

const POLL_MS = 200;
const RELEASE_MS = 100;

export interface WatchOptions {
  /**
   * Once seen, each marked process gets SIGURG every 100 ms until the watch stops (while its command line still
   * carries the needle): a payload's marked child holding with `sc.hold` then ends its hold. SIGURG is ignored by default.
   */
  release?: boolean;
}

/**
 * Polls the host's /proc for a process whose command line carries `needle` until stopped; stop()
 * resolves whether one was ever seen (idempotent). Proof that the host witness can see the box's
 * processes at all, before "none survived" may count.
 */
export function watchForProcess(needle: string, options: WatchOptions = {}): { stop(): Promise<boolean> } {
  let seen = false;
  let stopped = false;
  let found: number[] = [];
  const carries = (pid: number): boolean => procBytes(`/proc/${pid}/cmdline`)?.toString('utf8').includes(needle) ?? false;
  const loop = (async () => {
    while (!stopped && !seen) {
      found = (await findProcessesWithCmdline(needle)).map((p) => p.pid);
      if (found.length > 0) seen = true;
      else await new Promise((r) => setTimeout(r, POLL_MS));
    }
    while (options.release && !stopped && found.length > 0) {
      // The pid is read again first: a process that ended must not pass its signal on to a later holder of its pid.
      found = found.filter(carries);
      for (const pid of found) {
        try {
          process.kill(pid, 'SIGURG');
        } catch {
          // Gone between the read and the signal.
        }
      }
      await new Promise((r) => setTimeout(r, RELEASE_MS));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return seen;
    },
  };
}
