import { availableParallelism } from 'node:os';
import type { ProbeLoad } from './probe-cost.js';

/** How many jobs may run at once: in all, CPU-bound, and waiting (sleeping or holding while the host watches). */
export interface Slots {
  limit: number;
  cpu: number;
  wait: number;
}

/** The most environments the default starts at once, however many cores the machine has. */
const MAX_DEFAULT_CPU_SLOTS = 8;

/**
 * Without -j: one CPU-bound job per core (at least 2), and, where a box costs almost nothing to start
 * (`lightBoxes`), as many waiting jobs again beside them; a container's or a third-party tool's start-up
 * needs a core whatever its payload then does. With -j N: at most N at once, never more CPU-bound ones than
 * cores, so a timing-sensitive probe keeps the CPU it needs.
 */
export function slotsFor(concurrency: number | undefined, cores = availableParallelism(), lightBoxes = true): Slots {
  const cpu = Math.max(1, Math.min(cores, MAX_DEFAULT_CPU_SLOTS));
  if (concurrency === undefined) {
    const c = Math.max(2, cpu);
    return lightBoxes ? { limit: 2 * c, cpu: c, wait: c } : { limit: c, cpu: c, wait: c };
  }
  const n = Math.max(1, Math.floor(concurrency));
  return { limit: n, cpu: Math.min(n, cpu), wait: n };
}

export interface ScheduleItem {
  expectedMs: number;
  load: ProbeLoad;
  /** Items of one exclusive group never run at the same time. */
  exclusive?: string;
  /**
   * Runs with nothing else beside it (network probes: every probe's judge reads the lab's decoy log over its own
   * window, so a window shared with a network probe would take its contacts as the other probe's).
   */
  alone?: boolean;
}

/** Work an item hands back when it ends (a task's replay): scheduled like any other item, by its own cost. */
export interface FollowUp {
  item: ScheduleItem;
  run: () => Promise<void>;
}

/**
 * Runs every item once: longest expected first (ties in their given order), each started as soon as a slot fits
 * it, so no slot waits on an exclusive group or an item that must run alone while other work is ready (those
 * run once the others have drained). A waiting item may take a free CPU slot
 * when no CPU-bound item is left to start. Once `stopped()` is true nothing new starts; resolves when all that
 * started has ended. An item's follow-up joins the queue where its expected cost puts it.
 */
export function runScheduled(
  items: readonly ScheduleItem[],
  slots: Slots,
  runItem: (index: number) => Promise<void | FollowUp>,
  stopped: () => boolean,
): Promise<void> {
  type Job = { item: ScheduleItem; run: () => Promise<void | FollowUp> };
  const pending: Job[] = items
    .map((item, index) => ({ item, index }))
    .sort((a, b) => b.item.expectedMs - a.item.expectedMs || a.index - b.index)
    .map(({ item, index }) => ({ item, run: () => runItem(index) }));
  const enqueue = (job: Job): void => {
    const at = pending.findIndex((p) => p.item.expectedMs < job.item.expectedMs);
    pending.splice(at < 0 ? pending.length : at, 0, job);
  };
  let cpu = 0;
  let wait = 0;
  const busyGroups = new Set<string>();
  let aloneRunning = false;
  const fits = ({ item }: { item: ScheduleItem }): boolean => {
    if (aloneRunning || cpu + wait >= slots.limit) return false;
    if (item.alone && cpu + wait > 0) return false;
    if (item.exclusive !== undefined && busyGroups.has(item.exclusive)) return false;
    if (item.load === 'cpu') return cpu < slots.cpu;
    return wait < slots.wait || !pending.some((p) => p.item.load === 'cpu' && (p.item.exclusive === undefined || !busyGroups.has(p.item.exclusive)));
  };
  return new Promise((resolve) => {
    const launch = (): void => {
      while (!stopped()) {
        const at = pending.findIndex(fits);
        const next = at < 0 ? undefined : pending.splice(at, 1)[0];
        if (!next) break;
        const { item } = next;
        if (item.load === 'cpu') cpu++;
        else wait++;
        if (item.exclusive !== undefined) busyGroups.add(item.exclusive);
        if (item.alone) aloneRunning = true;
        void next
          .run()
          .catch(() => undefined)
          .then((follow) => {
            if (follow) enqueue(follow);
            if (item.load === 'cpu') cpu--;
            else wait--;
            if (item.exclusive !== undefined) busyGroups.delete(item.exclusive);
            if (item.alone) aloneRunning = false;
            launch();
          });
      }
      if (cpu + wait === 0) resolve();
    };
    launch();
  });
}
