import { findProcessesWithCmdline } from '../lab/process-scan.js';
import { exeBasename, procLink } from '../core/proc-files.js';
import { PAYLOAD_INTERPRETER } from './host-observers.js';

/**
 * The payload's interpreter still running with `nonce` in its command line, `graceMs` after the exec returned (a kill
 * the backend sent just before returning has that long to take effect). Empty where the host cannot see the box's
 * processes (a remote box, a user-space kernel): the check can only withhold a `held`.
 */
export async function payloadStillRunning(nonce: string, graceMs = 1000): Promise<string[]> {
  const look = async (): Promise<string[]> =>
    (await findProcessesWithCmdline(nonce))
      .filter((p) => PAYLOAD_INTERPRETER.test(exeBasename(procLink(`/proc/${p.pid}/exe`) ?? '')))
      .map((p) => `pid ${p.pid} (${p.command.slice(0, 80)})`);
  const until = Date.now() + graceMs;
  let alive = await look();
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    alive = await look();
  }
  return alive;
}
