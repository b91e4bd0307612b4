import { z } from 'zod';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { Category } from '../model/verdict.js';
import { visibleText } from '../core/clean-text.js';

/**
 * What makes the matrix recommend rather than only list: each backend's probes sorted by what they showed, a
 * paragraph per backend that says what it stops and what it lets through, the ranking (and its rule), and the
 * legend both renderers print. The data comes from the scorecards only; the renderers add no judgement.
 */

const id = (t: string): string => {
  const s = visibleText(t).replace(/\s+/g, ' ').trim();
  return s.length > 128 ? `${s.slice(0, 127)}…` : s;
};

export const OutcomesSchema = z.strictObject({
  ran: z.number().int().nonnegative().describe('security probes that ran (every verdict but not-applicable and unenforced)'),
  crossed: z.array(z.string()).describe('the probes that crossed'),
  inconclusive: z.array(z.string()).describe('the probes that stayed inconclusive'),
  heldNotClaimed: z.array(z.string()).describe('the probes that held although the backend does not claim their policy item: a hold it does not promise'),
  unenforced: z.array(z.string()).describe('the probes recorded unenforced (not run: the item is required and not enforced)'),
  stops: z
    .array(z.strictObject({ category: Category, held: z.number().int().nonnegative(), ran: z.number().int().nonnegative() }))
    .describe('per category: probes held of the probes that ran'),
  falseClaims: z
    .array(z.strictObject({ item: z.string(), failing: z.array(z.string()) }))
    .describe('claimed items a probe of which crossed or was inconclusive'),
  tasksUnexpected: z.array(z.string()).describe('task cases whose verdict was not the expected one, or an error'),
});
export type Outcomes = z.infer<typeof OutcomesSchema>;

export const RankingSchema = z.strictObject({
  rule: z.string(),
  order: z
    .array(
      z.strictObject({
        column: z.number().int().nonnegative().describe('index into columns'),
        rank: z.number().int().positive().nullable().describe('1 lets least through; equal keys share a rank; null: the backend did not run'),
        key: z.array(z.number().int().nonnegative()).describe('crossed, inconclusive, held-not-claimed, unenforced: the counts compared, in that order'),
      }),
    )
    .describe('every column, best first; the ones that did not run last'),
});
export type MatrixRanking = z.infer<typeof RankingSchema>;

export const RANKING_RULE =
  'Ranked by what each backend let through, fewest first: crossed probes, then inconclusive ones, then probes that held although the backend does not claim their policy item (a hold it does not promise), then unenforced ones; backends equal on all four share a rank. Counts are over the probes each backend ran; task cases, cold start and false claims (shown beside) do not move the rank. A backend that did not run is not ranked.';

/** The verdicts and marks of both renderers, in the order a reader meets them. */
export const MATRIX_LEGEND: readonly { term: string; meaning: string; cls: string }[] = [
  {
    term: 'held',
    cls: 'held',
    meaning: "the probe demonstrably attempted its attack and the backend's own control was seen stopping it, from outside the box",
  },
  {
    term: 'crossed',
    cls: 'crossed',
    meaning: 'the attack got through, seen from outside: a canary came out, a decoy was contacted, a host file changed, a limit was passed',
  },
  {
    term: 'inconclusive',
    cls: 'inconclusive',
    meaning: 'neither shown: the payload did not demonstrably attempt, something else stopped it, or a witness could not see; never counted as held',
  },
  {
    term: 'unenforced',
    cls: 'unenforced',
    meaning:
      'the policy requires the item, the backend does not enforce it, and its probe was not run (its payload cannot be bounded without the control, or --trust-claims); a failure',
  },
  { term: 'not-applicable', cls: 'not-applicable', meaning: 'the policy does not require the item, or a cause outside the box (no lab, a tool missing)' },
  {
    term: 'not claimed',
    cls: '',
    meaning:
      'the backend does not declare that it enforces the item; its probes still ran and the verdict is what was observed (held — not claimed is a hold it does not promise)',
  },
  { term: 'FALSE CLAIM', cls: 'false', meaning: 'the backend declares that it enforces the item, and a probe of it crossed or was inconclusive' },
  {
    term: 'accepted / rejected',
    cls: 'accepted-ok',
    meaning: 'task cases: the verdict on a program; (UNEXPECTED) when it is not the expected one, error when the harness failed',
  },
  { term: 'unavailable', cls: 'unavailable', meaning: 'the backend could not run on this machine; why and its install command are in its column' },
  { term: '–', cls: '', meaning: 'the probe did not run in that column' },
  { term: 'bold probe id (HTML: red left edge)', cls: '', meaning: 'the columns that ran the probe disagree' },
];

/** Each probe of one run sorted by what it showed. */
export function outcomesOf(security: SecurityScorecard, task: TaskScorecard): Outcomes {
  const enforces = new Set(security.backend.enforces);
  const results = security.results;
  const ids = (pick: (r: (typeof results)[number]) => boolean): string[] => results.filter(pick).map((r) => id(r.id));
  const stops = Category.options.flatMap((category) => {
    const inCat = results.filter((r) => r.category === category && r.verdict !== 'not-applicable' && r.verdict !== 'unenforced');
    return inCat.length ? [{ category, held: inCat.filter((r) => r.verdict === 'held').length, ran: inCat.length }] : [];
  });
  const falseClaims = [...enforces].sort().flatMap((item) => {
    const failing = results.filter((r) => r.policyItem === item && (r.verdict === 'crossed' || r.verdict === 'inconclusive'));
    return failing.length ? [{ item: id(item), failing: failing.map((r) => id(r.id)) }] : [];
  });
  return {
    ran: results.filter((r) => r.verdict !== 'not-applicable' && r.verdict !== 'unenforced').length,
    crossed: ids((r) => r.verdict === 'crossed'),
    inconclusive: ids((r) => r.verdict === 'inconclusive'),
    // Cards of earlier versions have no `claimed`: the backend's declared items decide.
    heldNotClaimed: ids((r) => r.verdict === 'held' && (r.claimed === false || (r.claimed === undefined && !enforces.has(r.policyItem)))),
    unenforced: ids((r) => r.verdict === 'unenforced'),
    stops,
    falseClaims,
    tasksUnexpected: task.results.filter((r) => r.outcome === 'unexpected' || r.outcome === 'error').map((r) => id(r.id)),
  };
}

const rankKey = (o: Outcomes): number[] => [o.crossed.length, o.inconclusive.length, o.heldNotClaimed.length, o.unenforced.length];

function compareKeys(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/** Columns best first by RANKING_RULE (stable: equal keys keep the order given, and share a rank); undefined: did not run. */
export function rankColumns(outcomes: readonly (Outcomes | undefined)[]): MatrixRanking {
  const ran = outcomes.flatMap((o, column) => (o ? [{ column, key: rankKey(o) }] : [])).sort((a, b) => compareKeys(a.key, b.key) || a.column - b.column);
  const order: MatrixRanking['order'] = [];
  ran.forEach((r, i) => {
    const prev = order[i - 1];
    order.push({ column: r.column, key: r.key, rank: prev && compareKeys(prev.key, r.key) === 0 ? (prev.rank ?? i + 1) : i + 1 });
  });
  outcomes.forEach((o, column) => {
    if (!o) order.push({ column, key: [], rank: null });
  });
  return { rule: RANKING_RULE, order };
}

const list = (items: readonly string[], max = 60): string =>
  items.length <= max ? items.join(', ') : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;

/** One paragraph: what the backend stops, what it lets through (each crossed probe named), what it claims falsely, what stayed inconclusive. */
export function summaryOf(name: string, o: Outcomes, facts: { control: boolean; incomplete: boolean }): string {
  const s: string[] = [];
  if (facts.control) s.push(`${name} is the unsandboxed control: it isolates nothing, and its crossings show that the probes can fail.`);
  const whole = o.stops.filter((c) => c.held === c.ran).map((c) => `${c.category} (${c.ran})`);
  const part = o.stops.filter((c) => c.held > 0 && c.held < c.ran).map((c) => `${c.held} of ${c.ran} in ${c.category}`);
  const held = o.stops.reduce((n, c) => n + c.held, 0);
  if (o.ran === 0) s.push('No probe ran on it: every one was not-applicable or unenforced.');
  else if (held === 0) s.push(`It stopped none of the ${o.ran} probes that ran.`);
  else
    s.push(
      `It stopped ${held} of the ${o.ran} probes that ran: ${[whole.length ? `every probe of ${whole.join(', ')}` : '', part.join(', ')].filter(Boolean).join('; ')}.`,
    );
  s.push(o.crossed.length ? `It does not stop ${o.crossed.length} (crossed): ${list(o.crossed)}.` : 'Nothing crossed.');
  s.push(
    o.falseClaims.length
      ? `It claims falsely ${o.falseClaims.length} item${o.falseClaims.length === 1 ? '' : 's'}: ${o.falseClaims.map((f) => `${f.item} (${f.failing.map((p) => `${p} ${o.crossed.includes(p) ? 'crossed' : 'inconclusive'}`).join(', ')})`).join('; ')}.`
      : 'No claim of it was false.',
  );
  s.push(o.inconclusive.length ? `Inconclusive ${o.inconclusive.length}: ${list(o.inconclusive)}.` : 'Nothing stayed inconclusive.');
  if (o.heldNotClaimed.length) s.push(`Held though not claimed ${o.heldNotClaimed.length} (holds it does not promise): ${list(o.heldNotClaimed, 12)}.`);
  if (o.unenforced.length) s.push(`Unenforced ${o.unenforced.length} (not run: required, not enforced): ${list(o.unenforced, 12)}.`);
  if (o.tasksUnexpected.length) s.push(`Task cases not as expected ${o.tasksUnexpected.length}: ${list(o.tasksUnexpected, 12)}.`);
  if (facts.incomplete) s.push('The run is INCOMPLETE: these counts cover only what ran.');
  return s.join(' ');
}
