import { describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY, REFERENCE_POLICY } from '../../model/policy.js';
import { expectedMs, parseShard, shardProbes } from '../../harness/shard.js';
import { allProbes } from '../../suites/index.js';

describe('--shard i/n', () => {
  it('parses i/n and refuses everything else with a usage error naming the form', () => {
    expect(parseShard('2/3')).toEqual({ index: 2, total: 3 });
    expect(parseShard(' 1/1 ')).toEqual({ index: 1, total: 1 });
    for (const bad of ['0/3', '4/3', '3', '1/0', 'a/b', '-1/2', '1/2/3', '1/1001', '']) {
      let err: unknown;
      try {
        parseShard(bad);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(SandcheckError);
      expect((err as SandcheckError).code).toBe('USAGE');
      expect((err as SandcheckError).message).toContain('i/n');
    }
  });

  it('shards 1..n run every probe exactly once, in the order of the selection', () => {
    const probes = allProbes();
    for (const total of [1, 2, 3, 5, 8, probes.length + 3]) {
      const parts = Array.from({ length: total }, (_, i) => shardProbes(probes, { index: i + 1, total }, CI_POLICY));
      const ids = parts.flat().map((p) => p.id);
      expect(ids.length, `n=${total}`).toBe(probes.length);
      expect(new Set(ids).size).toBe(probes.length);
      for (const part of parts) {
        const order = part.map((p) => probes.indexOf(p));
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }
    }
  });

  it('is deterministic: the same selection and policy give the same slice, whatever the call order', () => {
    const probes = allProbes();
    const a = shardProbes(probes, { index: 2, total: 3 }, CI_POLICY).map((p) => p.id);
    shardProbes(probes, { index: 1, total: 3 }, CI_POLICY);
    const b = shardProbes(probes, { index: 2, total: 3 }, CI_POLICY).map((p) => p.id);
    expect(b).toEqual(a);
  });

  it('balances by expected duration: the wall-bound probes are spread and no shard expects more than the lightest by one probe', () => {
    const probes = allProbes();
    for (const policy of [CI_POLICY, REFERENCE_POLICY]) {
      const total = 3;
      const loads = Array.from({ length: total }, (_, i) =>
        shardProbes(probes, { index: i + 1, total }, policy).reduce((s, p) => s + expectedMs(p, policy), 0),
      );
      const heaviest = Math.max(...probes.map((p) => expectedMs(p, policy)));
      expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(heaviest);
      const wallBound = ['wall-clock-spin', 'wall-clock-sleep', 'resource-headroom'];
      const homes = wallBound.map((id) =>
        Array.from({ length: total }, (_, i) => i).find((i) => shardProbes(probes, { index: i + 1, total }, policy).some((p) => p.id === id)),
      );
      expect(new Set(homes).size).toBe(3);
    }
  });

  it('expects the whole wall for programs that run until stopped, so a longer wall weighs more', () => {
    const spin = allProbes().find((p) => p.id === 'wall-clock-spin');
    const file = allProbes().find((p) => p.id === 'secret-decoy-file');
    if (!spin || !file) throw new Error('suite changed: wall-clock-spin or secret-decoy-file missing');
    expect(expectedMs(spin, REFERENCE_POLICY)).toBeGreaterThan(expectedMs(spin, CI_POLICY));
    expect(expectedMs(spin, CI_POLICY)).toBeGreaterThan(expectedMs(file, CI_POLICY));
  });
});
