import { findProcessesWithCmdline } from '../lab/process-scan.js';
import { exeBasename, procLink } from '../core/proc-files.js';
import { PAYLOAD_INTERPRETER } from './host-observers.js';
import { describeTracked, isInterpreter, type ExecTracker, type TrackedProcess } from './exec-tracker.js';

/**
 * The payload's interpreter still running with `nonce` in its command line, `graceMs` after the exec returned (a kill
 * the backend sent just before returning has that long to take effect); with a tracker, also every interpreter process
 * the host tied to this execution (or the adapter named) while it ran, by pid + start time, whatever its command line says now (a blanked
 * argv hides nothing; a stopped process is alive) and every interpreter process started since in a namespace or cgroup
 * of this execution's program alone (harness/exec-tracker.ts). Empty where the host cannot see the box's processes (a remote box,
 * a user-space kernel): the check can only withhold a `held`.
 */
export async function payloadStillRunning(nonce: string, graceMs = 1000, tracker?: ExecTracker): Promise<string[]> {
  const look = async (): Promise<string[]> => {
    const byArgv = (await findProcessesWithCmdline(nonce)).filter((p) => PAYLOAD_INTERPRETER.test(exeBasename(procLink(`/proc/${p.pid}/exe`) ?? '')));
    const pids = new Set(byArgv.map((p) => p.pid));
    const byIdentity: TrackedProcess[] = [];
    for (const t of [...(tracker?.alive(isInterpreter) ?? []), ...(tracker?.namedAlive(isInterpreter) ?? [])]) {
      if (pids.has(t.pid)) continue;
      pids.add(t.pid);
      byIdentity.push(t);
    }
    // And where it runs: the payload's interpreter in a namespace or cgroup of this execution's program alone.
    const byScope = (tracker?.inScopes((exe) => PAYLOAD_INTERPRETER.test(exe)) ?? []).filter((t) => !pids.has(t.pid));
    return [...byArgv.map((p) => `pid ${p.pid} (${p.command.slice(0, 80)})`), ...[...byIdentity, ...byScope].map(describeTracked)];
  };
  const until = Date.now() + graceMs;
  let alive = await look();
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    alive = await look();
  }
  return alive;
}
