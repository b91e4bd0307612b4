import type { Policy } from '../model/policy.js';
import type { ProbeSpec } from '../model/probe.js';
import { expectedMs } from './probe-cost.js';

export { ShardSchema, type Shard } from '../model/shard.js';
import type { Shard } from '../model/shard.js';

export { parseShard } from '../model/shard-arg.js';
export { expectedMs } from './probe-cost.js';

/**
 * The probes of shard `index` of `total`: longest expected first, each to the shard with the least expected
 * time so far (ties: the lower shard), ids breaking ties in the order. Every shard computes the same
 * assignment from the same selection and policy, so shards 1..n together run each probe exactly once.
 * The result keeps the selection's order.
 */
export function shardProbes<P extends ProbeSpec>(probes: readonly P[], shard: Shard, policy: Policy): P[] {
  const order = [...probes]
    .map((p, i) => ({ p, i, ms: expectedMs(p, policy) }))
    .sort((a, b) => b.ms - a.ms || (a.p.id < b.p.id ? -1 : a.p.id > b.p.id ? 1 : 0));
  const load = new Array<number>(shard.total).fill(0);
  const mine = new Set<number>();
  for (const { i, ms } of order) {
    let best = 0;
    for (let s = 1; s < shard.total; s++) if ((load[s] ?? 0) < (load[best] ?? 0)) best = s;
    load[best] = (load[best] ?? 0) + ms;
    if (best === shard.index - 1) mine.add(i);
  }
  return probes.filter((_, i) => mine.has(i));
}
