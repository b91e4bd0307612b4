import { z } from 'zod';
import {
  SecuritySummarySchema,
  TaskSummarySchema,
  type SecurityResult,
  type SecurityScorecard,
  type TaskResult,
  type TaskScorecard,
} from '../model/scorecard.js';
import { Category, SecurityVerdict } from '../model/verdict.js';
import { capText, visibleText } from '../core/clean-text.js';
import { OutcomesSchema, RankingSchema, outcomesOf, rankColumns, summaryOf } from './matrix-recommend.js';

/** `sandcheck matrix`: several backends side by side, one column each; the data both renderers (Markdown, HTML) draw from. */

export const MATRIX_VERSION = '1.1.0';
/** Evidence kept per cell: every line, each capped, the whole capped (the scorecards keep everything). */
const EVIDENCE_LINE_MAX = 2000;
const EVIDENCE_LINES_MAX = 40;

const CellSchema = z.strictObject({
  anchor: z
    .string()
    .regex(/^[a-z0-9-]+$/)
    .describe("the HTML id of this cell's evidence block"),
  verdict: z.string().describe('security: held, crossed, unenforced, inconclusive, not-applicable; task: accepted, rejected, error or not-applicable'),
  outcome: z.enum(['as-expected', 'unexpected', 'error', 'not-applicable']).optional().describe('task cases only'),
  waived: z.boolean().optional(),
  reason: z.string(),
  evidence: z.array(z.string()).describe('`[outside|inside] witness @ where: detail`, one per line, cleaned and capped'),
});
export type MatrixCell = z.infer<typeof CellSchema>;

const RowSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  kind: z.enum(['security', 'task']),
  group: z.union([Category, z.literal('task')]).describe('the security category, or task'),
  policyItem: z.string(),
  differs: z.boolean().describe('the columns that ran it do not agree'),
  cells: z.array(CellSchema.nullable()).describe('one per column; null: not run there'),
});
export type MatrixRow = z.infer<typeof RowSchema>;

const ClaimSchema = z.strictObject({
  item: z.string().describe('a policy item the backend declared it enforces (backend.enforces), or one whose probes ran although it did not'),
  claimed: z.boolean().describe('the backend declared it enforces the item; false: its probes ran anyway and this is what they showed'),
  observed: z
    .union([SecurityVerdict, z.literal('not probed')])
    .describe('the worst verdict of the probes of that item (crossed > inconclusive > unenforced > held > not-applicable)'),
  probes: z.array(z.string()),
  failing: z.array(z.string()).describe('the probes of the item that crossed or were inconclusive'),
  falseClaim: z.boolean().describe('claimed, yet a probe of it crossed or was inconclusive'),
});
export type MatrixClaim = z.infer<typeof ClaimSchema>;

const ColdStartSchema = z.strictObject({ samples: z.number().int().positive(), p50: z.number(), p95: z.number() });

const ColumnSchema = z.strictObject({
  header: z.string().describe('backend name, its label in brackets; `#n` when two columns would look alike'),
  backend: z.string(),
  label: z.string().optional(),
  status: z.enum(['ran', 'unavailable']),
  source: z.string().describe('the output directory the scorecards came from, or where the run would have written them'),
  unavailable: z
    .strictObject({ reason: z.string(), install: z.string() })
    .optional()
    .describe('why the backend could not run on this machine and the command that installs it'),
  policy: z.string().optional(),
  tool: z.string().optional().describe('the sandbox tool and version the run recorded (environment.tools)'),
  toolShort: z.string().optional().describe("the tool's name and version number, for the column header (a bare version number gets the tool's name)"),
  kernel: z.string().optional(),
  isolation: z.enum(['none', 'sandbox']).optional(),
  incomplete: z.boolean().optional(),
  security: SecuritySummarySchema.optional(),
  task: TaskSummarySchema.optional(),
  score: z.string().describe('crossed and inconclusive counts first, never a percentage'),
  coldStartMs: ColdStartSchema.nullable().describe(
    'create() to the first output byte, over every execution of both cards (observation.startupMs); null when none was recorded',
  ),
  coldStartSameMs: ColdStartSchema.nullable().describe(
    'the same, over only the probes and task cases every column that ran recorded a cold start for: equal sample sizes across columns',
  ),
  claims: z.array(ClaimSchema),
  falseClaims: z.number().int().nonnegative(),
  outcomes: OutcomesSchema.optional().describe('the probes sorted by what they showed (a column that ran)'),
  summary: z.string().describe('one paragraph: what the backend stops, what it lets through, what it claims falsely, what stayed inconclusive'),
});
export type MatrixColumn = z.infer<typeof ColumnSchema>;

export const MatrixReportSchema = z
  .strictObject({
    report: z.literal('matrix'),
    version: z.literal(MATRIX_VERSION),
    generatedAt: z.iso.datetime(),
    columns: z.array(ColumnSchema).min(1),
    ranking: RankingSchema,
    coldStartSame: z
      .strictObject({ samples: z.number().int().nonnegative(), columns: z.number().int().nonnegative() })
      .describe('coldStartSameMs: executions per column (the same in each), and how many columns they were taken from'),
    rows: z.array(RowSchema),
  })
  .meta({ id: 'sandcheck-matrix', title: 'sandcheck matrix: several backends side by side' });
export type MatrixReport = z.infer<typeof MatrixReportSchema>;

/** One column's input: the two scorecards of a run, or why the backend could not run. */
export type MatrixInput =
  | { kind: 'cards'; source: string; security: SecurityScorecard; task: TaskScorecard }
  | { kind: 'unavailable'; source: string; backend: string; reason: string; install: string };

const oneLine = (t: string, max = 300): string => {
  const s = visibleText(t).replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** The tool whose version says most about each built-in backend. */
const BACKEND_TOOL: Record<string, string> = {
  bwrap: 'bwrap',
  process: 'python3',
  'docker-default': 'docker',
  'docker-hardened': 'docker',
  docker: 'docker',
  gvisor: 'runsc',
  command: 'bwrap',
};

/** The name a tool goes by: a built-in backend's tool, or the tool a preset is named after (its name up to the first `-`: srt-deny-home runs srt). */
const toolName = (recorded: string): string => {
  const bare = recorded.replace(/^backend:/, '').replace(/^preset:/, '');
  return recorded.startsWith('backend:') ? (bare.split('-')[0] ?? bare) : bare;
};

/**
 * The backend's own answer (a preset, the command backend), else the tool a built-in backend drives; never another tool
 * that merely is installed. A version line that is a bare number (srt prints `0.0.78`) gets the tool's name in front.
 */
function toolOf(card: SecurityScorecard): { tool: string; short: string } | undefined {
  const tools = card.environment?.tools ?? [];
  const name = BACKEND_TOOL[card.backend.name];
  const tool = tools.find((t) => t.tool.startsWith('backend:') && t.status === 'ok') ?? tools.find((t) => t.tool === name);
  if (!tool) return undefined;
  const named = toolName(tool.tool);
  if (tool.status !== 'ok' || tool.version === undefined) {
    const line = oneLine(tool.status === 'ok' ? `${named} (version unknown)` : `${named}: ${tool.status}`, 120);
    return { tool: line, short: line };
  }
  const version = oneLine(tool.version, 120);
  const full = /^v?\d/.test(version) ? oneLine(`${named} ${version}`, 120) : version;
  // `Docker version 20.10.24+dfsg1, build 297e128` → `Docker 20.10.24+dfsg1`; `systemd 252 (252.39-1)` → `systemd 252`.
  const first = full.split(' ')[0] ?? named;
  const number = /(?:^|\s)v?(\d[\w.~+:-]*)/.exec(full.slice(first.length))?.[1]?.replace(/[,;]$/, '');
  return { tool: full, short: number ? `${first} ${number}` : full };
}

function percentile(sorted: readonly number[], p: number): number {
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return Math.round(sorted[Math.min(rank, sorted.length) - 1] ?? 0);
}

export function coldStart(results: readonly { observation?: { startupMs?: number | undefined } | undefined }[]): MatrixColumn['coldStartMs'] {
  const samples = results.flatMap((r) => (r.observation?.startupMs !== undefined ? [r.observation.startupMs] : [])).sort((a, b) => a - b);
  return samples.length ? { samples: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95) } : null;
}

/** The worst first: what a claim's probes showed. */
const SEVERITY_ORDER: readonly SecurityVerdict[] = ['crossed', 'inconclusive', 'unenforced', 'held', 'not-applicable'];

/** What was observed of every item the backend claims, and of every item it does not claim whose probes ran anyway. */
export function claimsOf(card: SecurityScorecard): MatrixClaim[] {
  const claimed = new Set(card.backend.enforces);
  const ranUnclaimed = card.results
    .filter((r) => r.claimed === false && !claimed.has(r.policyItem) && (r.verdict === 'crossed' || r.verdict === 'held' || r.verdict === 'inconclusive'))
    .map((r) => r.policyItem);
  return [...new Set([...claimed, ...ranUnclaimed])].sort().map((item) => {
    const probes = card.results.filter((r) => r.policyItem === item);
    const observed = SEVERITY_ORDER.find((v) => probes.some((r) => r.verdict === v)) ?? 'not probed';
    const failing = probes.filter((r) => r.verdict === 'crossed' || r.verdict === 'inconclusive');
    return {
      item: oneLine(item, 128),
      claimed: claimed.has(item),
      observed,
      probes: probes.map((r) => oneLine(r.id, 128)),
      failing: failing.map((r) => oneLine(r.id, 128)),
      falseClaim: claimed.has(item) && failing.length > 0,
    };
  });
}

/** The one-line score: failures first, every count shown, no percentage. */
export function scoreLine(security: SecurityScorecard['summary'] | undefined, task: TaskScorecard['summary'] | undefined): string {
  if (!security || !task) return 'not run';
  const s = `crossed ${security.crossed} · inconclusive ${security.inconclusive} · unenforced ${security.unenforced} · held ${security.held} · n/a ${security.notApplicable}`;
  const t = `task: unexpected ${task.unexpected} · error ${task.error} · as expected ${task.asExpected}${task.notApplicable ? ` · n/a ${task.notApplicable}` : ''}`;
  return `${s} | ${t}`;
}

const evidenceLines = (evidence: SecurityResult['evidence']): string[] =>
  evidence
    .slice(0, EVIDENCE_LINES_MAX)
    .map((e) => capText(visibleText(`[${e.source}] ${e.witness}${e.where ? ` @ ${e.where}` : ''}: ${e.detail}`), EVIDENCE_LINE_MAX));

const anchorOf = (col: number, kind: string, row: number): string => `c${col}-${kind === 'security' ? 's' : 't'}${row}`;

function securityCell(r: SecurityResult, anchor: string): MatrixCell {
  return { anchor, verdict: r.verdict, ...(r.waiver ? { waived: true } : {}), reason: oneLine(r.reason, 1000), evidence: evidenceLines(r.evidence) };
}

function taskCell(r: TaskResult, anchor: string): MatrixCell {
  return {
    anchor,
    verdict: r.verdict ?? (r.outcome === 'not-applicable' ? 'not-applicable' : 'error'),
    outcome: r.outcome,
    reason: oneLine(r.reason, 1000),
    evidence: evidenceLines(r.evidence),
  };
}

function headers(inputs: readonly MatrixInput[]): string[] {
  const plain = inputs.map((i) => {
    if (i.kind === 'unavailable') return oneLine(i.backend, 96);
    const label = i.security.environment?.label;
    return oneLine(label ? `${i.security.backend.name} [${label}]` : i.security.backend.name, 96);
  });
  return plain.map((h, i) => (plain.filter((x) => x === h).length > 1 ? `${h} #${i + 1}` : h));
}

function column(input: MatrixInput, header: string, same: ReadonlySet<string> | undefined): MatrixColumn {
  if (input.kind === 'unavailable') {
    return {
      header,
      backend: oneLine(input.backend, 256),
      status: 'unavailable',
      source: input.source,
      unavailable: { reason: oneLine(input.reason, 2000), install: oneLine(input.install, 500) },
      score: 'not run: unavailable',
      coldStartMs: null,
      coldStartSameMs: null,
      claims: [],
      falseClaims: 0,
      summary: `${header} did not run here: ${oneLine(input.reason, 500)}. Install: ${oneLine(input.install, 300)}.`,
    };
  }
  const { security, task } = input;
  const label = security.environment?.label;
  const tool = toolOf(security);
  const claims = claimsOf(security);
  const outcomes = outcomesOf(security, task);
  const incomplete = security.run.incomplete || task.run.incomplete;
  return {
    header,
    backend: oneLine(security.backend.name, 256),
    ...(label !== undefined ? { label: oneLine(label, 128) } : {}),
    status: 'ran',
    source: input.source,
    policy: oneLine(security.policy.name, 128),
    ...(tool !== undefined ? { tool: tool.tool, toolShort: tool.short } : {}),
    ...(security.environment ? { kernel: oneLine(security.environment.kernel, 128) } : {}),
    isolation: security.backend.isolation,
    incomplete,
    security: security.summary,
    task: task.summary,
    score: scoreLine(security.summary, task.summary),
    coldStartMs: coldStart([...security.results, ...task.results]),
    coldStartSameMs: same
      ? coldStart([...security.results, ...task.results].filter((r, i) => same.has(i < security.results.length ? `s:${r.id}` : `t:${r.id}`)))
      : null,
    claims,
    falseClaims: claims.filter((c) => c.falseClaim).length,
    outcomes,
    summary: summaryOf(header, outcomes, { control: security.backend.isolation === 'none', incomplete }),
  };
}

/** The probes and task cases (`s:id`, `t:id`) every column that ran recorded a cold start for: timings compared over equal samples. */
function sameExecutions(inputs: readonly MatrixInput[]): Set<string> | undefined {
  const ran = inputs.flatMap((i) => (i.kind === 'cards' ? [i] : []));
  if (ran.length === 0) return undefined;
  const keysOf = (c: (typeof ran)[number]): Set<string> =>
    new Set([
      ...c.security.results.flatMap((r) => (r.observation?.startupMs !== undefined ? [`s:${r.id}`] : [])),
      ...c.task.results.flatMap((r) => (r.observation?.startupMs !== undefined ? [`t:${r.id}`] : [])),
    ]);
  const [first, ...rest] = ran.map(keysOf);
  return new Set([...(first ?? [])].filter((k) => rest.every((s) => s.has(k))));
}

const GROUP_ORDER: readonly MatrixRow['group'][] = [...Category.options, 'task'];

/** Rows grouped by category (security card) then the task cases; within a group, in the order the runs reported them. */
export function buildMatrix(inputs: readonly MatrixInput[], now = new Date()): MatrixReport {
  const names = headers(inputs);
  const same = sameExecutions(inputs);
  const columns = inputs.map((input, i) => column(input, names[i] ?? '', same));
  const cards = inputs.map((i) => (i.kind === 'cards' ? i : undefined));
  const seen = new Map<string, { id: string; title: string; kind: 'security' | 'task'; group: MatrixRow['group']; policyItem: string }>();
  for (const c of cards) {
    for (const r of c?.security.results ?? [])
      if (!seen.has(`s:${r.id}`)) seen.set(`s:${r.id}`, { id: r.id, title: r.title, kind: 'security', group: r.category, policyItem: r.policyItem });
    for (const r of c?.task.results ?? [])
      if (!seen.has(`t:${r.id}`)) seen.set(`t:${r.id}`, { id: r.id, title: r.title, kind: 'task', group: 'task', policyItem: r.policyItem });
  }
  const keys = [...seen.values()].sort((a, b) => GROUP_ORDER.indexOf(a.group) - GROUP_ORDER.indexOf(b.group));
  const rows = keys.map((k, rowIndex): MatrixRow => {
    const cells = cards.map((c, col) => {
      if (!c) return null;
      const anchor = anchorOf(col, k.kind, rowIndex);
      if (k.kind === 'security') {
        const r = c.security.results.find((x) => x.id === k.id);
        return r ? securityCell(r, anchor) : null;
      }
      const r = c.task.results.find((x) => x.id === k.id);
      return r ? taskCell(r, anchor) : null;
    });
    const ran = cells.filter((x) => x !== null);
    return {
      id: oneLine(k.id, 128),
      title: oneLine(k.title, 512),
      kind: k.kind,
      group: k.group,
      policyItem: oneLine(k.policyItem, 256),
      differs: new Set(ran.map((x) => `${x.verdict}/${x.outcome ?? ''}`)).size > 1,
      cells,
    };
  });
  const ranking = rankColumns(columns.map((c) => c.outcomes));
  const coldStartSame = { samples: same?.size ?? 0, columns: cards.filter((c) => c !== undefined).length };
  return MatrixReportSchema.parse({ report: 'matrix', version: MATRIX_VERSION, generatedAt: now.toISOString(), columns, ranking, coldStartSame, rows });
}
