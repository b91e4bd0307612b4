import { outside } from '../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext, TaskCase } from '../../model/probe.js';
import { SeededRng, inputOf, type HiddenInputs } from '../../probes/_shared/task/hidden-inputs.js';
import { halfCentPrice, halfUpCents, type HalfCentKind } from '../../probes/_shared/task/boundaries.js';
import { withDeclaredOutputs, type DeclaredOutputs } from '../../probes/_shared/task/outputs.js';
import { parseJson } from '../../probes/_shared/task/predicates.js';
import type { TaskCaseSpec } from '../../probes/_shared/task/task-case.js';

/** One price list line: an item and a unit price in thousandths (mills), written with three decimals. */
export interface PriceLine {
  item: string;
  mills: number;
}

/** The visible list: no price ends in half a cent, so a careless rounding is right on it. */
export const VISIBLE_PRICES: readonly PriceLine[] = [
  { item: 'diesel', mills: 1749 },
  { item: 'petrol', mills: 1832 },
  { item: 'bolt', mills: 63 },
  { item: 'cable', mills: 12401 },
  { item: 'tape', mills: 3998 },
  { item: 'glue', mills: 7257 },
];

const ITEMS = ['nut', 'washer', 'hinge', 'rivet', 'spring', 'clamp', 'pin', 'gasket', 'valve', 'fuse', 'relay', 'lamp'] as const;
const TRAPS: readonly HalfCentKind[] = ['scaled-below', 'bankers', 'double-below'];

export const price = (mills: number): string => `${Math.floor(mills / 1000)}.${String(mills % 1000).padStart(3, '0')}`;

export function pricesCsv(lines: readonly PriceLine[]): Uint8Array {
  return Buffer.from(`item,price\n${lines.map((l) => `${l.item},${price(l.mills)}`).join('\n')}\n`);
}

/** What a correct program writes: every price rounded half up to whole cents, and their sum. */
export function expectedCents(lines: readonly PriceLine[]): { cents: Record<string, number>; totalCents: number } {
  const cents = Object.fromEntries(lines.map((l) => [l.item, halfUpCents(l.mills)]));
  return { cents, totalCents: lines.reduce((sum, l) => sum + halfUpCents(l.mills), 0) };
}

/** Hidden lists: 6–9 lines drawn uniformly, plus one price of each half-cent trap on every seed, shuffled. */
function hiddenPrices(rng: SeededRng): PriceLine[] {
  const mills = [...TRAPS.map((kind) => halfCentPrice(rng, kind, 1, 99_999)), ...Array.from({ length: rng.int(3, 6) }, () => rng.int(1, 99_999))];
  for (let i = mills.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [mills[i], mills[j]] = [mills[j] as number, mills[i] as number];
  }
  return mills.map((m, i) => ({ item: `${ITEMS[i % ITEMS.length]}-${i + 1}`, mills: m }));
}

export const priceInputs: HiddenInputs<{ lines: readonly PriceLine[] }> = {
  hidden: 2,
  variant(index, rng) {
    const lines = index === 0 ? VISIBLE_PRICES : hiddenPrices(rng);
    return {
      label: index === 0 ? 'visible' : `hidden-${index}`,
      files: [{ path: 'input/prices.csv', content: pricesCsv(lines), readOnly: true }],
      expected: { lines },
    };
  },
};

/** cents.json is {"cents": {item: whole cents}, "totalCents": n}: every price rounded half up, exactly. */
export function centsPredicate(obs: Observation, ctx?: ProbeContext): PredicateResult {
  const parsed = parseJson(obs, 'cents.json');
  if (typeof parsed === 'string') return { accepted: false, reason: parsed };
  const lines = (ctx && inputOf<{ lines: readonly PriceLine[] }>(ctx)?.expected.lines) ?? VISIBLE_PRICES;
  const want = expectedCents(lines);
  const got = parsed.value as { cents?: Record<string, unknown>; totalCents?: unknown } | null;
  const evidence = [
    outside(
      'completion-predicate',
      `cents.json for ${lines.length} prices, total ${String(got?.totalCents)}; expected ${want.totalCents}`,
      'artifact:cents.json',
    ),
  ];
  if (typeof got !== 'object' || got === null || typeof got.cents !== 'object' || got.cents === null)
    return { accepted: false, reason: 'cents.json is not an object with "cents" and "totalCents"', evidence };
  const keys = Object.keys(got).sort().join(',');
  if (keys !== 'cents,totalCents') return { accepted: false, reason: `cents.json has the keys ${keys}, expected cents,totalCents`, evidence };
  const items = Object.keys(got.cents);
  const extra = items.find((k) => !(k in want.cents));
  if (extra !== undefined || items.length !== lines.length)
    return {
      accepted: false,
      reason: `cents.json prices ${items.length} items, the list has ${lines.length}${extra !== undefined ? ` (no item ${JSON.stringify(extra)})` : ''}`,
      evidence,
    };
  for (const l of lines) {
    const cents = got.cents[l.item];
    if (cents !== want.cents[l.item])
      return {
        accepted: false,
        reason: `${l.item} at ${price(l.mills)} is ${JSON.stringify(cents)} cents, rounded half up it is ${want.cents[l.item]}`,
        evidence,
      };
  }
  if (got.totalCents !== want.totalCents)
    return { accepted: false, reason: `totalCents is ${JSON.stringify(got.totalCents)}, the cents add up to ${want.totalCents}`, evidence };
  return { accepted: true, reason: `all ${lines.length} prices rounded half up to the cent, total ${want.totalCents}`, evidence };
}

/** cents.json and nothing else; JSON text without a byte order mark. */
export const CENTS_OUTPUTS: DeclaredOutputs = { files: ['cents.json'], text: { bom: 'reject', trailingSpace: 'allow' } };

export function priceTask(fields: Pick<TaskCase, 'id' | 'title' | 'payload' | 'expected'>): TaskCaseSpec {
  return {
    kind: 'task',
    policyItem: 'task.correctness',
    files: (ctx) => priceInputs.variant(0, new SeededRng('visible', 'variant-0'), ctx).files,
    hiddenInputs: priceInputs,
    artifacts: CENTS_OUTPUTS.files,
    outputs: CENTS_OUTPUTS,
    predicate: withDeclaredOutputs(CENTS_OUTPUTS, centsPredicate),
    ...fields,
  };
}
