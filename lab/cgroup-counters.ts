import { join } from 'node:path';
import type { ResourceReport } from '../model/backend-contract.js';
import { parseKeyed, readNumber, readText } from '../core/cgroup-files.js';

/** A cgroup's counters at one instant, as a ResourceReport carries them (absent = not observable). */
export type CgroupCounters = Omit<ResourceReport, 'source'>;

/** The same counters without the fields that were not observable (undefined). */
export function observedOnly<T extends object>(counters: T): T {
  return Object.fromEntries(Object.entries(counters).filter(([, v]) => v !== undefined)) as T;
}

/** An "unlimited" v1 memory limit reads as a huge page-aligned number. */
const V1_UNLIMITED = 2 ** 62;

/**
 * cgroup v1: one directory per controller (`controller → directory`; co-mounted controllers share one).
 * A counter is read only from its controller's directory; a controller without one leaves its counters out.
 */
export async function readV1Counters(dirs: ReadonlyMap<string, string>): Promise<CgroupCounters> {
  const file = (c: string, f: string): string | undefined => {
    const d = dirs.get(c);
    return d === undefined ? undefined : join(d, f);
  };
  const num = async (c: string, f: string): Promise<number | undefined> => {
    const p = file(c, f);
    return p === undefined ? undefined : readNumber(p);
  };
  const keyed = async (c: string, f: string, key: string): Promise<number | undefined> => {
    const p = file(c, f);
    return p === undefined ? undefined : parseKeyed(await readText(p)).get(key);
  };
  const memLimit = await num('memory', 'memory.limit_in_bytes');
  const quota = await num('cpu', 'cpu.cfs_quota_us');
  const period = await num('cpu', 'cpu.cfs_period_us');
  return observedOnly({
    memoryLimitBytes: memLimit !== undefined && memLimit < V1_UNLIMITED ? memLimit : undefined,
    memoryPeakBytes: await num('memory', 'memory.max_usage_in_bytes'),
    memoryFailcnt: await num('memory', 'memory.failcnt'),
    oomKills: await keyed('memory', 'memory.oom_control', 'oom_kill'),
    pidsLimit: await num('pids', 'pids.max'),
    pidsPeak: await num('pids', 'pids.peak'),
    pidsMaxEvents: await keyed('pids', 'pids.events', 'max'),
    // A quota of -1 is no quota.
    cpuQuotaCores: quota !== undefined && quota > 0 && period !== undefined && period > 0 ? quota / period : undefined,
    cpuUsageNs: await num('cpuacct', 'cpuacct.usage'),
    cpuThrottledPeriods: await keyed('cpu', 'cpu.stat', 'nr_throttled'),
  });
}

/**
 * cgroup v2: one directory. With `controllers` (those enabled for it), the memory and pids counters are
 * read only when their controller is among them; without, whatever files are there.
 */
export async function readV2Counters(dir: string, controllers?: ReadonlySet<string>): Promise<CgroupCounters> {
  const f = (n: string): string => join(dir, n);
  const has = (c: string): boolean => controllers === undefined || controllers.has(c);
  const cpuMax = (await readText(f('cpu.max')))?.trim().split(/\s+/);
  const quota = cpuMax?.[0] !== undefined && cpuMax[0] !== 'max' ? Number(cpuMax[0]) : undefined;
  const period = cpuMax?.[1] !== undefined ? Number(cpuMax[1]) : undefined;
  const cpuStat = parseKeyed(await readText(f('cpu.stat')));
  const memEvents = has('memory') ? parseKeyed(await readText(f('memory.events'))) : undefined;
  const usageUs = cpuStat.get('usage_usec');
  return observedOnly({
    memoryLimitBytes: has('memory') ? await readNumber(f('memory.max')) : undefined,
    memoryPeakBytes: has('memory') ? await readNumber(f('memory.peak')) : undefined,
    // memory.events "max": times usage hit the limit (v1's failcnt).
    memoryFailcnt: memEvents?.get('max'),
    oomKills: memEvents?.get('oom_kill'),
    pidsLimit: has('pids') ? await readNumber(f('pids.max')) : undefined,
    pidsPeak: has('pids') ? await readNumber(f('pids.peak')) : undefined,
    pidsMaxEvents: has('pids') ? parseKeyed(await readText(f('pids.events'))).get('max') : undefined,
    cpuQuotaCores: quota !== undefined && period ? quota / period : undefined,
    cpuUsageNs: usageUs === undefined ? undefined : usageUs * 1000,
    cpuThrottledPeriods: cpuStat.get('nr_throttled'),
  });
}
