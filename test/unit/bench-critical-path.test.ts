import { describe, expect, it } from 'vitest';
import { criticalPathMs } from '../../bench/suite-times.js';
import { isNetworkProbe, probeLoad } from '../../harness/probe-cost.js';
import { allProbes } from '../../suites/index.js';

/** The bench's "wall ÷ critical path" row: the least wall time the runner's schedule allows for the results' durations. */
const byId = new Map(allProbes().map((p) => [p.id, p]));
const slots = { limit: 4, cpu: 2, wait: 2 };

describe('bench critical path', () => {
  it('uses the classes the runner schedules by (preconditions of the cases below)', () => {
    const p = (id: string) => byId.get(id) ?? expect.fail(`no probe ${id}`);
    expect(isNetworkProbe(p('metadata-ipv4'))).toBe(true);
    expect(isNetworkProbe(p('dns-exfil'))).toBe(true);
    expect(probeLoad(p('identity-uid'))).toBe('wait');
    expect(probeLoad(p('secret-decoy-file'))).toBe('cpu');
  });

  it('network probes add up (they run with nothing beside them); the rest is bounded by the longest of them', () => {
    const results = [
      { id: 'metadata-ipv4', ms: 1000 },
      { id: 'dns-exfil', ms: 500 },
      { id: 'identity-uid', ms: 3000 },
      ...Array.from({ length: 4 }, () => ({ id: 'secret-decoy-file', ms: 500 })),
    ];
    expect(criticalPathMs(results, slots)).toBe(1500 + 3000);
  });

  it('CPU-bound work shares only the CPU slots, all work shares every slot, and an unknown id counts as CPU-bound', () => {
    const cpu = Array.from({ length: 8 }, () => ({ id: 'secret-decoy-file', ms: 1000 }));
    expect(criticalPathMs(cpu, slots)).toBe(8000 / 2);
    expect(criticalPathMs([...cpu.slice(0, 7), { id: 'no-such-probe', ms: 1000 }], slots)).toBe(8000 / 2);
    const waits = Array.from({ length: 8 }, () => ({ id: 'identity-uid', ms: 1000 }));
    expect(criticalPathMs(waits, slots)).toBe(8000 / 4);
    expect(criticalPathMs([], slots)).toBe(0);
  });
});
