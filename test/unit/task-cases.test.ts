import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { payloadPath } from '../../core/paths.js';
import { CI_POLICY } from '../../model/policy.js';
import type { ProbeContext } from '../../model/probe.js';
import { SeededRng, withInput } from '../../probes/_shared/task/hidden-inputs.js';
import { dailyInputs, dailyPredicate, expectedReport, VISIBLE_SALES } from '../../tasks/daily-totals/task.js';
import { resourceHeadroom } from '../../tasks/resource-headroom/probe.js';
import { badEndingTasks, counterexampleTasks, legitimateTasks, taskSuite, visibleOnlyTasks } from '../../suites/task.js';
import { obsWith } from '../helpers/task-fakes.js';

const ctx = { policy: CI_POLICY } as ProbeContext;
const MiB = 2 ** 20;

describe('the task suite', () => {
  it('has at least 10 exit-0 counterexamples beyond the 7 it started with, each with its payload', () => {
    expect(counterexampleTasks.length + visibleOnlyTasks.length - 7).toBeGreaterThanOrEqual(10);
    for (const t of taskSuite) {
      for (const a of t.attempts ?? [t]) expect(existsSync(payloadPath(a.payload ?? t.payload, a.payloadFile)), t.id).toBe(true);
    }
    expect(new Set(taskSuite.map((t) => t.id)).size).toBe(taskSuite.length);
    expect([...counterexampleTasks, ...visibleOnlyTasks, ...badEndingTasks].every((t) => t.expected === 'reject')).toBe(true);
    expect(legitimateTasks.every((t) => t.expected === 'accept')).toBe(true);
  });
});

describe('resource-headroom is measured from outside', () => {
  const wantMiB = Math.floor(CI_POLICY.resources.memoryMb * 0.8 - 24);
  const held = (peakMiB: number, wallMs: number, claim = wantMiB) =>
    obsWith(
      { 'result.json': JSON.stringify({ heldMiB: claim, checksum: claim }) },
      { wallMs, resources: { source: 'cgroup v2', memoryPeakBytes: peakMiB * MiB } },
    );

  it('accepts a measured peak at the target and a run of half the wall', () => {
    expect(resourceHeadroom.predicate(held(wantMiB + 10, 2600), ctx)).toMatchObject({ accepted: true });
  });

  it("rejects the payload's own claim when nothing outside measured memory (it was accepted on the claim)", () => {
    const r = resourceHeadroom.predicate(obsWith({ 'result.json': JSON.stringify({ heldMiB: wantMiB }) }, { wallMs: 2600 }), ctx);
    expect(r.reason).toMatch(/no memory peak measured from outside/);
    expect(r.evidence?.find((e) => e.source === 'inside')?.detail).toContain(`"heldMiB":${wantMiB}`);
  });

  it('rejects a claimed hold the cgroup peak contradicts, and a run shorter than half the wall (never checked before)', () => {
    expect(resourceHeadroom.predicate(held(40, 2600), ctx).reason).toMatch(/memory peak 40 MiB < the \d+ MiB the case must hold/);
    expect(resourceHeadroom.predicate(held(wantMiB + 10, 900), ctx).reason).toMatch(/ran 900 ms by the harness clock < the 2500 ms/);
  });

  it('falls back to the host-side VmHWM of the box processes when there is no cgroup', () => {
    const proc = {
      pid: 1,
      command: 'python3',
      realUid: 0,
      effectiveUid: 0,
      capEff: '0',
      noNewPrivs: 0,
      seccomp: 0,
      peakRssBytes: (wantMiB + 5) * MiB,
      hostUserNamespace: true,
    };
    const r = resourceHeadroom.predicate(obsWith({}, { wallMs: 2600, hostProcesses: [proc] }), ctx);
    expect(r).toMatchObject({ accepted: true });
    expect(r.evidence?.find((e) => e.witness === 'memory-peak')?.where).toMatch(/VmHWM/);
  });
});

describe('daily-totals: the report is decoded as RFC 4180 and judged row by row', () => {
  const csv = (rows: string[][]) =>
    ['date,sales,total,regions', ...rows.map((r) => r.map((f) => (f.includes(',') ? `"${f}"` : f)).join(','))].join('\r\n') + '\r\n';
  const want = expectedReport(VISIBLE_SALES);

  it('accepts the right report (quoted regions with commas) and names each business error', () => {
    expect(dailyPredicate(obsWith({ 'report.csv': csv(want) }))).toMatchObject({ accepted: true });
    expect(
      dailyPredicate(obsWith({ 'report.csv': csv(want.map((r) => [r[0] ?? '', r[1] ?? '', (r[2] ?? '').replace('.', ','), r[3] ?? ''])) })).reason,
    ).toMatch(/total "122,10" on 2026-03-01 is not a decimal number/);
    expect(dailyPredicate(obsWith({ 'report.csv': csv([...want].reverse()) })).reason).toMatch(/not in ascending date order/);
    expect(dailyPredicate(obsWith({ 'report.csv': csv(want.slice(0, 2)) })).reason).toBe('report.csv stops after 2 of 4 days');
    expect(dailyPredicate(obsWith({ 'report.csv': csv([want[0] ?? [], ...want]) })).reason).toMatch(/^row 2 duplicates row 1/);
    expect(dailyPredicate(obsWith({ 'report.csv': csv(want.slice(1)) })).reason).toMatch(/^row 1 is \["2026-03-02"/);
    expect(dailyPredicate(obsWith({ 'report.csv': 'date,sales,total,regions\n"2026-03-01,2\n' })).reason).toMatch(/^report.csv is not valid CSV/);
  });

  it('judges a generated input against that input, not the visible one', () => {
    const hidden = dailyInputs.variant(1, new SeededRng('0123abcd', 'variant-1'), ctx);
    const right = expectedReport(hidden.expected.sales);
    expect(right).not.toEqual(want);
    expect(dailyPredicate(obsWith({ 'report.csv': csv(right) }), withInput(ctx, hidden))).toMatchObject({ accepted: true });
    expect(dailyPredicate(obsWith({ 'report.csv': csv(want) }), withInput(ctx, hidden)).accepted).toBe(false);
  });
});
