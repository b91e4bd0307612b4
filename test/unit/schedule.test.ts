import { describe, expect, it } from 'vitest';
import { CI_POLICY } from '../../model/policy.js';
import { expectedMs, probeLoad } from '../../harness/probe-cost.js';
import { runScheduled, slotsFor, type ScheduleItem, type Slots } from '../../harness/schedule.js';
import { allProbes } from '../../suites/index.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { fakeMarkers, runFake } from '../helpers/fake-run.js';

interface Trace {
  started: number[];
  maxAtOnce: number;
  maxCpu: number;
  maxPerGroup: Map<string, number>;
}

/** Runs the items with fake durations (expectedMs of virtual time, scaled down) and records what ran together. */
async function trace(items: ScheduleItem[], slots: Slots, durations = items.map((i) => i.expectedMs), stopAfter = Infinity): Promise<Trace> {
  const t: Trace = { started: [], maxAtOnce: 0, maxCpu: 0, maxPerGroup: new Map() };
  const running = new Set<number>();
  await runScheduled(
    items,
    slots,
    async (index) => {
      t.started.push(index);
      running.add(index);
      const now = [...running].map((i) => items[i] as ScheduleItem);
      t.maxAtOnce = Math.max(t.maxAtOnce, now.length);
      t.maxCpu = Math.max(t.maxCpu, now.filter((i) => i.load === 'cpu').length);
      for (const g of new Set(now.flatMap((i) => (i.exclusive ? [i.exclusive] : [])))) {
        t.maxPerGroup.set(g, Math.max(t.maxPerGroup.get(g) ?? 0, now.filter((i) => i.exclusive === g).length));
      }
      await new Promise((r) => setTimeout(r, durations[index] ?? 0));
      running.delete(index);
    },
    () => t.started.length >= stopAfter,
  );
  expect(running.size).toBe(0);
  return t;
}

const cpu = (ms: number): ScheduleItem => ({ expectedMs: ms, load: 'cpu' });
const wait = (ms: number): ScheduleItem => ({ expectedMs: ms, load: 'wait' });
const net = (ms: number): ScheduleItem => ({ expectedMs: ms, load: 'wait', exclusive: 'network', alone: true });

describe('the probe schedule', () => {
  it('sizes the default from the cores: a CPU-bound probe per core and as many waiting ones; -j n caps all and CPU at the cores', () => {
    expect(slotsFor(undefined, 2)).toEqual({ limit: 4, cpu: 2, wait: 2 });
    expect(slotsFor(undefined, 1)).toEqual({ limit: 4, cpu: 2, wait: 2 });
    expect(slotsFor(undefined, 64)).toEqual({ limit: 16, cpu: 8, wait: 8 });
    expect(slotsFor(1, 2)).toEqual({ limit: 1, cpu: 1, wait: 1 });
    expect(slotsFor(3, 2)).toEqual({ limit: 3, cpu: 2, wait: 3 });
    // A box whose own start-up needs a core (containers, third-party tools) gets no extra waiting slots by default.
    expect(slotsFor(undefined, 2, false)).toEqual({ limit: 2, cpu: 2, wait: 2 });
    expect(slotsFor(3, 2, false)).toEqual({ limit: 3, cpu: 2, wait: 3 });
  });

  it('starts the longest first, ties in the given order, and runs everything once', async () => {
    const items = [cpu(1), cpu(5), cpu(3), cpu(5), cpu(2)];
    const t = await trace(items, slotsFor(1, 2));
    expect(t.started).toEqual([1, 3, 2, 4, 0]);
  });

  it('never runs more than the limit, more CPU-bound ones than the CPU slots, or two of one exclusive group', async () => {
    const items = [cpu(30), wait(30), net(20), net(20), cpu(10), wait(10), cpu(10), wait(5), net(5), cpu(5), wait(40), wait(40), wait(40)];
    const slots = slotsFor(undefined, 2);
    const t = await trace(items, slots);
    expect([...t.started].sort((a, b) => a - b)).toEqual(items.map((_, i) => i));
    expect(t.maxAtOnce).toBe(4);
    expect(t.maxCpu).toBe(2);
    expect(t.maxPerGroup.get('network')).toBe(1);
  });

  it('does not park a slot on a busy exclusive group while other work is ready', async () => {
    // Two of one group first in line: the second must not hold the other slot while the first runs.
    const grouped = (ms: number): ScheduleItem => ({ expectedMs: ms, load: 'wait', exclusive: 'g' });
    const t = await trace([grouped(60), grouped(50), cpu(10), cpu(10)], slotsFor(2, 2));
    expect(t.started.slice(0, 3)).toEqual([0, 2, 3]);
  });

  it('runs a network probe with nothing beside it, after the others drained, without parking a slot before', async () => {
    const items = [cpu(60), net(50), cpu(10), cpu(10), net(5)];
    const running = new Set<number>();
    const overlaps: string[] = [];
    const started: number[] = [];
    await runScheduled(
      items,
      slotsFor(2, 2),
      async (index) => {
        started.push(index);
        for (const other of running) if (items[index]?.alone || items[other]?.alone) overlaps.push(`${index} with ${other}`);
        running.add(index);
        await new Promise((r) => setTimeout(r, items[index]?.expectedMs ?? 0));
        running.delete(index);
      },
      () => false,
    );
    expect(overlaps).toEqual([]);
    expect(started).toEqual([0, 2, 3, 1, 4]);
  });

  it('lets a waiting probe take a free CPU slot once no CPU-bound one is left to start', async () => {
    const items = [wait(30), wait(30), wait(30), wait(30)];
    const t = await trace(items, { limit: 4, cpu: 2, wait: 2 });
    expect(t.maxAtOnce).toBe(4);
    // …but not while CPU-bound work waits for it.
    const mixed = await trace([wait(30), wait(30), wait(30), cpu(20), cpu(20), cpu(20)], { limit: 4, cpu: 2, wait: 2 });
    expect(mixed.started.slice(0, 4).sort((a, b) => a - b)).toEqual([0, 1, 3, 4]);
  });

  it("queues an item's follow-up by its own cost, in a free slot, after the item released its own", async () => {
    const items = [cpu(50), cpu(30), cpu(10)];
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const step = async (name: string, ms: number): Promise<void> => {
      order.push(name);
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
    };
    await runScheduled(
      items,
      slotsFor(1, 2),
      async (index) => {
        await step(String(index), items[index]?.expectedMs ?? 0);
        // The first item hands back a replay that costs 20: it goes before the item of 10, after the one of 30.
        if (index === 0) return { item: cpu(20), run: () => step('0-replay', 20) };
      },
      () => false,
    );
    expect(order).toEqual(['0', '1', '0-replay', '2']);
    expect(most).toBe(1);
  });

  it('starts nothing new once stopped, and still waits for what started', async () => {
    const items = [cpu(20), cpu(20), cpu(20), cpu(20)];
    const t = await trace(items, slotsFor(2, 2), undefined, 2);
    expect(t.started).toEqual([0, 1]);
  });

  it('every probe of the suite says what it costs: the wall-bound ones first, the timing-sensitive ones CPU-bound', () => {
    const probes = allProbes();
    const byId = new Map(probes.map((p) => [p.id, p]));
    const longest = [...probes]
      .sort((a, b) => expectedMs(b, CI_POLICY) - expectedMs(a, CI_POLICY))
      .slice(0, 4)
      .map((p) => p.id);
    expect(new Set(longest)).toEqual(new Set(['wall-clock-spin', 'wall-clock-sleep', 'resource-headroom', 'average-hangs-after-result']));
    for (const id of ['wall-clock-spin', 'fork-bomb', 'memory-bomb', 'cpu-quota', 'disk-fill', 'stdout-flood']) {
      const p = byId.get(id);
      if (!p) throw new Error(`suite changed: ${id} missing`);
      expect(probeLoad(p), id).toBe('cpu');
    }
    for (const id of ['wall-clock-sleep', 'identity-uid', 'posture-seccomp', 'survive-teardown', 'metadata-ipv4']) {
      const p = byId.get(id);
      if (!p) throw new Error(`suite changed: ${id} missing`);
      expect(probeLoad(p), id).toBe('wait');
    }
  });
});

describe('the runner follows the schedule', () => {
  /** Eight probes that each hold their box 150 ms; returns the most boxes that executed at once. */
  async function mostAtOnce(load: 'cpu' | 'wait', lightBoxes: boolean | undefined): Promise<number> {
    let now = 0;
    let most = 0;
    const probes = Array.from({ length: 8 }, (_, i) => ({ ...secretDecoyEnv, id: `held-open-${i}`, load }));
    const caps = { isolation: 'sandbox' as const, enforces: POLICY_ITEMS, ...(lightBoxes !== undefined ? { lightBoxes } : {}) };
    const { security } = await runFake(
      probes,
      ({ files }) => {
        now += 1;
        most = Math.max(most, now);
        setTimeout(() => (now -= 1), 150);
        return { stdout: `${fakeMarkers({ files }).start}${fakeMarkers({ files }).done}`, delayMs: 150 };
      },
      { caps },
    );
    expect(security).toHaveLength(8);
    return most;
  }

  it('holds waiting probes open beside the CPU-bound slots only on light boxes; CPU-bound ones never beyond the cores', async () => {
    expect(await mostAtOnce('wait', true)).toBe(slotsFor(undefined, undefined, true).limit);
    expect(await mostAtOnce('wait', undefined)).toBe(slotsFor(undefined, undefined, false).limit);
    expect(await mostAtOnce('cpu', true)).toBe(slotsFor(undefined, undefined, true).cpu);
  });
});
