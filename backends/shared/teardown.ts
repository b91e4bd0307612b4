import type { Leftovers } from '../../model/backend-contract.js';

/** An environment's destroy(): its teardown runs once, and an exec still running is stopped first. */

/** destroy() is idempotent: the first call runs the teardown; later calls wait for it and report nothing more. */
export class TeardownOnce {
  private started: Promise<Leftovers> | undefined;

  /** destroy() has been called. */
  get begun(): boolean {
    return this.started !== undefined;
  }

  run(teardown: () => Promise<Leftovers>): Promise<Leftovers> {
    if (this.started) return this.started.then(() => ({ items: [] }));
    this.started = teardown();
    return this.started;
  }
}

export interface RunningExec {
  stop(why: 'destroy'): Promise<void>;
  /** Settles when the exec has returned. */
  done: Promise<unknown>;
}

/** Stops an exec that still runs at destroy, then waits for it to wind down, at most `waitMs`. */
export async function stopRunningExec(running: RunningExec | undefined, waitMs: number): Promise<void> {
  if (!running) return;
  await running.stop('destroy');
  await Promise.race([running.done, new Promise((res) => setTimeout(res, waitMs).unref())]);
}
