import { bootId, readStat, sameProcessAlive } from './host-proc.js';

/**
 * Who owns a resource (an environment root, a container, a private daemon): a process named by pid, start
 * time and boot id, so that a later run can tell whether it is still alive.
 */
export interface Owner {
  pid: number;
  startTime: number;
  bootId: string;
}

/** This process as an owner. */
export async function selfOwner(): Promise<Owner> {
  return { pid: process.pid, startTime: (await readStat(process.pid))?.startTime ?? 0, bootId: await bootId() };
}

/** Same boot, same pid, same start time: the owner still runs (a reused pid or a reboot says it does not). */
export async function ownerAlive(o: Owner): Promise<boolean> {
  if (o.bootId !== (await bootId())) return false;
  return sameProcessAlive(o.pid, o.startTime);
}
