import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Observation, ProbeContext, WorkspaceListing } from '../../model/probe.js';
import { halfCentPrice, halfUpCents, isHalfCentTrap, pythonRound, truncatedCents, truncatingAmount } from '../../probes/_shared/task/boundaries.js';
import { SeededRng, inputVariants, withInput, type InputVariant } from '../../probes/_shared/task/hidden-inputs.js';
import { textContractViolation, withDeclaredOutputs, type DeclaredOutputs } from '../../probes/_shared/task/outputs.js';
import { DeclaredOutputsSchema } from '../../probes/_shared/task/outputs-schema.js';
import { listWorkspace } from '../../probes/_shared/task/workspace-listing.js';
import { averageInputs, averagePredicate, meanOf, type AverageInput } from '../../tasks/_shared/average-task.js';
import { dailyPredicate, expectedReport, VISIBLE_SALES } from '../../tasks/daily-totals/task.js';
import { dailyTotals } from '../../tasks/daily-totals/probe.js';
import { averageCorrect } from '../../tasks/average-correct/probe.js';
import { chartPredicate, VISIBLE_SERIES } from '../../tasks/png-chart/task.js';
import { centsPredicate, priceInputs, type PriceLine } from '../../tasks/price-cents/task.js';
import { obsWith, pngBytes } from '../helpers/task-fakes.js';

const ctx = {} as ProbeContext;
const on = <E>(input: InputVariant<E>): ProbeContext => withInput(ctx, input);
type Rgb = [number, number, number];
const BAR: Rgb = [40, 90, 200];
const WHITE: Rgb = [255, 255, 255];

/** A 200×100 chart of `series`, 8 bars 25 px wide with a 1 px gap, drawn by `fill(x, y, value)`. */
function chart(series: readonly number[], fill: (x: number, y: number, value: number) => boolean, colour: Rgb = BAR): Uint8Array {
  return pngBytes({ width: 200, height: 100, pixel: (x, y) => (x % 25 !== 0 && fill(x, y, series[Math.floor(x / 25)] ?? 0) ? colour : WHITE) });
}

describe('png-chart: each bar one contiguous run on the baseline, in the stated colours', () => {
  const values = VISIBLE_SERIES.values;
  const standing = (_x: number, y: number, v: number) => 100 - y <= v;
  const cases: { name: string; png: Uint8Array; reason?: RegExp }[] = [
    { name: 'bars standing on the baseline', png: chart(values, standing) },
    { name: 'bars hanging from the top', png: chart(values, (_x, y, v) => y < v), reason: /bar 1: column x=6 does not stand on the baseline/ },
    {
      name: 'scattered pixels, as many per column as the value',
      png: chart(values, (x, y, v) => (y * 37 + Math.floor(x / 25) * 11) % 100 < v),
      reason: /bar 1: column x=6 (does not stand on the baseline|is not one run)/,
    },
    {
      name: 'a bar with a gap in it',
      png: chart(values, (_x, y, v) => 100 - y <= v && y !== 99 - 2),
      reason: /not one run from the baseline: bar colour again/,
    },
    {
      name: 'a triangle instead of a bar',
      png: chart(values, (x, y, v) => 100 - y <= Math.min(v, (x % 25) * 4)),
      reason: /bar \d is not a bar: its columns are/,
    },
    { name: 'the right bars in red', png: chart(values, standing, [200, 40, 40]), reason: /has #c82828 at .*the chart is #285ac8 bars on #ffffff/ },
    {
      name: 'a grey axis line along the bottom',
      png: pngBytes({
        width: 200,
        height: 100,
        pixel: (x, y) => (y === 99 ? [128, 128, 128] : x % 25 !== 0 && 100 - y <= (values[Math.floor(x / 25)] ?? 0) ? BAR : WHITE),
      }),
      reason: /has #808080/,
    },
  ];
  it.each(cases)('$name', ({ png, reason }) => {
    const r = chartPredicate(obsWith({ 'chart.png': png }));
    if (reason) expect(r.reason).toMatch(reason);
    expect(r.accepted).toBe(reason === undefined);
  });
});

describe('the text contract of a declared output', () => {
  const strict = { bom: 'reject', trailingSpace: 'reject' } as const;
  const lax = { bom: 'allow', trailingSpace: 'allow' } as const;
  const cases: { name: string; text: string; contract: DeclaredOutputs['text']; violation?: RegExp }[] = [
    { name: 'plain lines', text: 'a,b\n1,2\n', contract: strict },
    { name: 'CRLF line ends', text: 'a,b\r\n1,2\r\n', contract: strict },
    { name: 'no newline at the end', text: 'a,b\n1,2', contract: strict },
    { name: 'a BOM, rejected', text: '\ufeffa,b\n1,2\n', contract: strict, violation: /byte order mark/ },
    { name: 'a BOM, allowed', text: '\ufeffa,b\n1,2\n', contract: { bom: 'allow', trailingSpace: 'reject' } },
    { name: 'a trailing space, rejected', text: 'a,b\n1,2 \n', contract: strict, violation: /^line 2 ends with a space or tab/ },
    { name: 'a trailing tab before CRLF, rejected', text: 'a,b\t\r\n', contract: strict, violation: /^line 1 ends/ },
    { name: 'a trailing space at the end of the file, rejected', text: 'a,b\n1,2 ', contract: strict, violation: /^line 2 ends/ },
    { name: 'trailing spaces, allowed', text: '{"a": 1} \n ', contract: { bom: 'reject', trailingSpace: 'allow' } },
    { name: 'both, allowed', text: '\ufeffa \n', contract: lax },
  ];
  it.each(cases)('$name', ({ text, contract, violation }) => {
    const got = textContractViolation(Buffer.from(text), contract ?? strict);
    if (violation) expect(got).toMatch(violation);
    else expect(got).toBeUndefined();
  });

  it('daily-totals: a report with a BOM is rejected (the CSV reader drops the BOM, so it was accepted), without one accepted', () => {
    const csv = `date,sales,total,regions\n${expectedReport(VISIBLE_SALES)
      .map((r) => r.map((c) => (c.includes(',') ? `"${c}"` : c)).join(','))
      .join('\n')}\n`;
    const judge = (o: Observation) => dailyTotals.predicate(o, ctx);
    expect(dailyPredicate(obsWith({ 'report.csv': `\ufeff${csv}` })).accepted).toBe(true);
    expect(judge(obsWith({ 'report.csv': `\ufeff${csv}` })).reason).toBe('report.csv starts with a UTF-8 byte order mark, which this task does not allow');
    expect(judge(obsWith({ 'report.csv': csv })).accepted).toBe(true);
  });

  it('the average result: JSON whitespace is allowed, a BOM is not', () => {
    const judge = (o: Observation) => averageCorrect.predicate(o, ctx);
    const mean = meanOf(averageInputs.variant(0, new SeededRng('v', 'v'), ctx).expected.values);
    expect(judge(obsWith({ 'result.json': `{\n  "rows": 12,   \n  "mean": ${mean.toExponential(16)}\n}  \n` })).accepted).toBe(true);
    expect(judge(obsWith({ 'result.json': `\ufeff{"mean": ${mean}, "rows": 12}` })).reason).toMatch(/^result.json starts with a UTF-8 byte order mark/);
  });

  it('the declared-outputs schema refuses a path out of the workspace and an empty list', () => {
    expect(DeclaredOutputsSchema.safeParse({ files: ['../x'] }).success).toBe(false);
    expect(DeclaredOutputsSchema.safeParse({ files: [] }).success).toBe(false);
    expect(DeclaredOutputsSchema.safeParse({ files: ['r.json'], text: { bom: 'maybe', trailingSpace: 'allow' } }).success).toBe(false);
    expect(DeclaredOutputsSchema.parse({ files: ['out/r.json'], text: { bom: 'reject', trailingSpace: 'allow' } }).files).toEqual(['out/r.json']);
  });
});

describe('declared outputs: a file the task did not name is a rejection', () => {
  const right = JSON.stringify({ mean: meanOf(averageInputs.variant(0, new SeededRng('v', 'v'), ctx).expected.values), rows: 12 });
  const judge = (o: Observation) => averageCorrect.predicate(o, ctx);
  const listing = (paths: string[], truncated = false): WorkspaceListing => ({ entries: paths.map((path) => ({ path, kind: 'file', size: 1 })), truncated });
  const withListing = (w: WorkspaceListing | undefined): Observation => ({ ...obsWith({ 'result.json': right }), ...(w ? { workspace: w } : {}) });
  const cases: { name: string; workspace: WorkspaceListing | undefined; reason?: RegExp }[] = [
    { name: 'only the declared output', workspace: listing(['result.json']) },
    { name: "the interpreter's bytecode cache", workspace: listing(['__pycache__/sandcheck_payload.cpython-311.pyc', 'result.json']) },
    {
      name: 'stray wrong copies beside the right result',
      workspace: listing(['output/result.json', 'result (copy).json', 'result.json', 'result.json.bak']),
      reason:
        /^the workspace holds files the task did not ask for \(output\/result.json, result \(copy\).json, result.json.bak\); its outputs are result.json$/,
    },
    { name: 'an empty directory left behind', workspace: { entries: [{ path: 'out', kind: 'directory', size: 0 }], truncated: false }, reason: /\(out\)/ },
    { name: 'a listing cut short at its bound', workspace: listing(['result.json'], true), reason: /the listing stopped at its bound/ },
  ];
  it.each(cases)('$name', ({ workspace, reason }) => {
    const r = judge(withListing(workspace));
    if (reason) expect(r.reason).toMatch(reason);
    expect(r.accepted).toBe(reason === undefined);
  });

  it('a declared file that is missing is a rejection even when the predicate looked elsewhere', () => {
    const judge2 = withDeclaredOutputs({ files: ['a.json', 'b.json'] }, () => ({ accepted: true, reason: 'stdout is right' }));
    expect(judge2(obsWith({ 'a.json': '{}' })).reason).toBe('artifact b.json is missing: the task declares it as an output');
    expect(judge2(obsWith({ 'a.json': '{}', 'b.json': '{}' })).accepted).toBe(true);
  });

  it('a backend whose workspace the host cannot list: judged on the predicate, and the evidence says strays were not checked', () => {
    const r = judge(withListing(undefined));
    expect(r.accepted).toBe(true);
    expect(r.evidence?.map((e) => e.detail)).toContain('the host could not list this workspace, so stray outputs were not checked');
  });

  it('the host lists the workspace without the files it put there, without following links', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sc-listing-'));
    try {
      await mkdir(join(root, 'input'));
      await mkdir(join(root, 'empty'));
      await mkdir(join(root, 'out/deep'), { recursive: true });
      await writeFile(join(root, 'input/data.csv'), 'value\n1\n');
      await writeFile(join(root, 'payload.py'), '');
      await writeFile(join(root, 'result.json'), '{}');
      await writeFile(join(root, 'out/deep/copy.json'), '{"a":1}');
      await symlink('../outside', join(root, 'link'));
      const got = await listWorkspace(root, new Set(['input/data.csv', 'payload.py']));
      expect(got).toEqual({
        entries: [
          { path: 'empty', kind: 'directory', size: 0 },
          { path: 'link', kind: 'symlink', size: '../outside'.length },
          { path: 'out/deep/copy.json', kind: 'file', size: 7 },
          { path: 'result.json', kind: 'file', size: 2 },
        ],
        truncated: false,
      });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('hidden inputs hold the boundaries a careless program gets wrong, on every seed', () => {
  const seeds = Array.from({ length: 200 }, (_, i) => `seed${i.toString(16).padStart(4, '0')}`);

  it('boundary values are what Python computes (figures checked with python3)', () => {
    expect([1999, 29, 115, 100].map(truncatedCents)).toEqual([1998, 28, 114, 100]);
    expect([2675, 125, 1005, 8345].map(halfUpCents)).toEqual([268, 13, 101, 835]);
    expect([12.5, 13.5, 100.49999999999999, 2.5000000000000004].map(pythonRound)).toEqual([12, 14, 100, 3]);
    expect(isHalfCentTrap(1005, 'scaled-below')).toBe(true);
    expect(isHalfCentTrap(125, 'bankers')).toBe(true);
    expect(isHalfCentTrap(2675, 'double-below')).toBe(true);
    expect(isHalfCentTrap(8345, 'scaled-below') || isHalfCentTrap(8345, 'bankers') || isHalfCentTrap(8345, 'double-below')).toBe(false);
    const rng = new SeededRng('s', 'b');
    for (let i = 0; i < 50; i++) {
      const cents = truncatingAmount(rng, 100, 9999);
      expect(truncatedCents(cents)).toBe(cents - 1);
      expect(isHalfCentTrap(halfCentPrice(rng, 'bankers', 1, 99_999), 'bankers')).toBe(true);
    }
  });

  it('average: int(t*100) before averaging is right on the visible input and wrong on a hidden one of every seed', () => {
    const carelessMean = (values: readonly number[]) => values.map((v) => Math.trunc(v * 100)).reduce((a, b) => a + b, 0) / values.length / 100;
    for (const seed of seeds) {
      const [visible, ...hidden] = inputVariants<AverageInput>(averageInputs, seed, ctx);
      const judged = (input: InputVariant<AverageInput>) =>
        averagePredicate(
          obsWith({ 'result.json': JSON.stringify({ mean: carelessMean(input.expected.values), rows: input.expected.values.length }) }),
          on(input),
        );
      expect(visible && judged(visible).accepted).toBe(true);
      expect(hidden.some((input) => !judged(input).accepted)).toBe(true);
    }
  });

  it('price-cents: round(float(t)*100) and round(t, 2) are right on the visible list and wrong on every hidden one; half up is right', () => {
    type Rounder = (mills: number) => number;
    const viaScaled: Rounder = (m) => pythonRound((m / 1000) * 100);
    const viaTwoPlaces: Rounder = (m) => (m % 10 === 5 && isHalfCentTrap(m, 'double-below') ? Math.floor(m / 10) : halfUpCents(m));
    const judged = (input: InputVariant<{ lines: readonly PriceLine[] }>, round: Rounder) => {
      const cents = Object.fromEntries(input.expected.lines.map((l) => [l.item, round(l.mills)]));
      const total = Object.values(cents).reduce((a, b) => a + b, 0);
      return centsPredicate(obsWith({ 'cents.json': JSON.stringify({ cents, totalCents: total }) }), on(input)).accepted;
    };
    for (const seed of seeds) {
      const [visible, ...hidden] = inputVariants(priceInputs, seed, ctx);
      if (!visible) throw new Error('no visible input');
      for (const careless of [viaScaled, viaTwoPlaces]) {
        expect(judged(visible, careless)).toBe(true);
        expect(hidden.every((input) => !judged(input, careless))).toBe(true);
      }
      expect([visible, ...hidden].every((input) => judged(input, halfUpCents))).toBe(true);
    }
  });
});
