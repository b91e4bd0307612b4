import { outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../../model/probe.js';
import { SeededRng, inputOf, type HiddenInputs } from '../../probes/_shared/task/hidden-inputs.js';
import { artifactBytes, parseCsv } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';
import { withDeclaredOutputs, type DeclaredOutputs } from '../../probes/_shared/task/outputs.js';

/** One sale: a UTC timestamp, a region (some hold a comma), an amount in cents. */
export interface Sale {
  at: string;
  region: string;
  cents: number;
}

const REGIONS = ['North, East', 'South', 'West', 'Central'] as const;
export const HEADER = ['date', 'sales', 'total', 'regions'] as const;

/** The visible input: unordered, with sales near midnight UTC so a time-zone shift moves them. */
export const VISIBLE_SALES: readonly Sale[] = [
  { at: '2026-03-02T09:15:00Z', region: 'South', cents: 12050 },
  { at: '2026-03-01T23:40:00Z', region: 'North, East', cents: 8000 },
  { at: '2026-03-02T02:10:00Z', region: 'West', cents: 1525 },
  { at: '2026-03-03T12:00:00Z', region: 'South', cents: 30000 },
  { at: '2026-03-01T10:05:00Z', region: 'Central', cents: 4210 },
  { at: '2026-03-03T04:30:00Z', region: 'North, East', cents: 795 },
  { at: '2026-03-04T18:20:00Z', region: 'West', cents: 6400 },
  { at: '2026-03-02T21:45:00Z', region: 'Central', cents: 1999 },
];

const money = (cents: number): string => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
const quote = (field: string): string => (/[",\n]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field);

export function salesCsv(sales: readonly Sale[]): Uint8Array {
  return Buffer.from(`timestamp,region,amount\n${sales.map((s) => [s.at, quote(s.region), money(s.cents)].join(',')).join('\n')}\n`);
}

/** The report a correct program writes: one row per UTC date, ascending. */
export function expectedReport(sales: readonly Sale[]): string[][] {
  const days = new Map<string, { n: number; cents: number; regions: Set<string> }>();
  for (const s of sales) {
    const day = new Date(s.at).toISOString().slice(0, 10);
    const d = days.get(day) ?? { n: 0, cents: 0, regions: new Set<string>() };
    d.n += 1;
    d.cents += s.cents;
    d.regions.add(s.region);
    days.set(day, d);
  }
  return [...days.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([day, d]) => [day, String(d.n), money(d.cents), [...d.regions].sort().join('; ')]);
}

function hiddenSales(rng: SeededRng): Sale[] {
  const start = Date.UTC(2026, rng.int(0, 10), rng.int(1, 20));
  const sales: Sale[] = [];
  const days = rng.int(5, 8);
  for (let d = 0; d < days; d++) {
    for (let k = rng.int(1, 3); k > 0; k--) {
      const minute = rng.int(0, 24 * 60 - 1);
      const at = new Date(start + d * 86_400_000 + minute * 60_000).toISOString().replace('.000Z', 'Z');
      sales.push({ at, region: rng.pick(REGIONS), cents: rng.int(100, 99_999) });
    }
  }
  // Shuffled, so the order of the report is the program's work.
  for (let i = sales.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [sales[i], sales[j]] = [sales[j] as Sale, sales[i] as Sale];
  }
  return sales;
}

export const dailyInputs: HiddenInputs<{ sales: readonly Sale[] }> = {
  hidden: 2,
  variant(index, rng) {
    const sales = index === 0 ? VISIBLE_SALES : hiddenSales(rng);
    return {
      label: index === 0 ? 'visible' : `hidden-${index}`,
      files: [{ path: 'input/sales.csv', content: salesCsv(sales), readOnly: true }],
      expected: { sales },
    };
  },
};

const show = (row: readonly string[] | undefined): string => JSON.stringify(row ?? null);

/** report.csv decoded as RFC 4180 and compared row by row, with the reason a reviewer would give. */
export function dailyPredicate(obs: Observation, ctx?: ProbeContext): PredicateResult {
  const bytes = artifactBytes(obs, 'report.csv');
  if (typeof bytes === 'string') return { accepted: false, reason: bytes };
  const table = parseCsv(bytes);
  if (typeof table === 'string') return { accepted: false, reason: `report.csv is ${table}` };
  const [header = [], ...rows] = table;
  if (show(header) !== show([...HEADER])) return { accepted: false, reason: `report.csv has the header ${show(header)}, expected ${show([...HEADER])}` };
  const sales = (ctx && inputOf<{ sales: readonly Sale[] }>(ctx)?.expected.sales) ?? VISIBLE_SALES;
  const want = expectedReport(sales);
  const evidence = [outside('completion-predicate', `report.csv: ${rows.length} rows decoded (RFC 4180), ${want.length} expected`, 'artifact:report.csv')];
  const badTotal = rows.find((r) => !/^\d+\.\d{2}$/.test(r[2] ?? ''));
  if (badTotal)
    return { accepted: false, reason: `total ${JSON.stringify(badTotal[2])} on ${badTotal[0]} is not a decimal number with a point and two places`, evidence };
  const keys = rows.map((r) => show(r));
  const dup = keys.findIndex((k, i) => keys.indexOf(k) !== i);
  if (dup >= 0) return { accepted: false, reason: `row ${dup + 1} duplicates row ${keys.indexOf(keys[dup] ?? '') + 1} (${show(rows[dup])})`, evidence };
  const wantKeys = want.map((r) => show(r));
  if (rows.length < want.length && keys.every((k, i) => k === wantKeys[i]))
    return { accepted: false, reason: `report.csv stops after ${rows.length} of ${want.length} days`, evidence };
  if (keys.length === wantKeys.length && [...keys].sort().join() === [...wantKeys].sort().join() && keys.join() !== wantKeys.join()) {
    return { accepted: false, reason: `the rows are right but not in ascending date order (first ${show(rows[0])})`, evidence };
  }
  const diff = Math.max(rows.length, want.length);
  for (let i = 0; i < diff; i++) {
    if (keys[i] !== wantKeys[i]) return { accepted: false, reason: `row ${i + 1} is ${show(rows[i])}, expected ${show(want[i])}`, evidence };
  }
  return { accepted: true, reason: `report.csv has the right ${want.length} daily rows in date order`, evidence };
}

/** report.csv and nothing else: UTF-8 without a byte order mark, no space or tab at a line end (a cell is compared exactly). */
export const DAILY_OUTPUTS: DeclaredOutputs = { files: ['report.csv'], text: { bom: 'reject', trailingSpace: 'reject' } };

export function dailyTask(fields: Pick<TaskCase, 'id' | 'title' | 'payload' | 'expected'>): TaskCaseSpec {
  return {
    kind: 'task',
    policyItem: 'task.correctness',
    files: (ctx) => dailyInputs.variant(0, new SeededRng('visible', 'variant-0'), ctx).files,
    hiddenInputs: dailyInputs,
    artifacts: DAILY_OUTPUTS.files,
    outputs: DAILY_OUTPUTS,
    predicate: withDeclaredOutputs(DAILY_OUTPUTS, dailyPredicate),
    ...fields,
  };
}
