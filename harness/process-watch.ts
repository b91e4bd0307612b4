import { findProcessesWithCmdline } from '../lab/process-scan.js';

const POLL_MS = 200;

/**
 * Polls the host's /proc for a process whose command line carries `needle` until stopped; stop()
 * resolves whether one was ever seen (idempotent). Proof that the host witness can see the box's
 * processes at all, before "none survived" may count.
 */
export function watchForProcess(needle: string): { stop(): Promise<boolean> } {
  let seen = false;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && !seen) {
      if ((await findProcessesWithCmdline(needle)).length > 0) seen = true;
      else await new Promise((r) => setTimeout(r, POLL_MS));
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
