import { z } from 'zod';
import type { Evidence } from '../model/evidence.js';
import type { SecurityResult, SecurityScorecard, TaskResult, TaskScorecard } from '../model/scorecard.js';
import { SecuritySummarySchema, TaskSummarySchema } from '../model/scorecard.js';
import { WaiverNoteSchema, WaiverSchema, type Waiver } from '../model/waiver.js';
import { policyDifferences } from './compare.js';
import { evidenceFingerprint, isExpired, liveWaiverFor, utcDay, waiverMatches, waiverUses, type WaiverSubject } from '../harness/waivers.js';

export const GATE_REPORT_VERSION = '1.0.0';

const ChangeClass = z.enum(['regression', 'improvement', 'changed', 'unchanged']);
export type ChangeClass = z.infer<typeof ChangeClass>;

const ChangeSchema = z.strictObject({
  kind: z.enum(['security', 'task', 'claim']).describe('a probe verdict, a task case outcome, or a policy item the backend claims to enforce'),
  id: z.string().describe('probe id, task case id, or policy item'),
  class: ChangeClass,
  base: z.string().nullable().describe('verdict (security), outcome (task) or claimed / not claimed in the base run; null = absent'),
  head: z.string().nullable(),
  reason: z.string().describe("the head result's reason (the base's when the head has none)"),
  evidence: z.array(z.strictObject({ source: z.enum(['outside', 'inside']), witness: z.string(), where: z.string().optional(), detail: z.string() })),
  fingerprint: z.string().optional().describe("the head result's outside-evidence fingerprint, for a waiver's `fingerprint`"),
  waiver: WaiverNoteSchema.optional().describe('a live waiver accepts this regression: reported, not a failure'),
  expiredWaiver: WaiverNoteSchema.optional().describe('a waiver matched this change after its expiry day: a failure'),
});
export type Change = z.infer<typeof ChangeSchema>;

const SideSchema = z.strictObject({
  dir: z.string(),
  backend: z.string(),
  label: z.string().optional().describe("the run's --label"),
  policy: z.string(),
  runId: z.string(),
  security: SecuritySummarySchema,
  task: TaskSummarySchema,
});

export const GateReportSchema = z
  .strictObject({
    report: z.literal('gate'),
    version: z.literal(GATE_REPORT_VERSION),
    today: z.iso.date().describe('the UTC day waiver expiry was judged against'),
    passed: z.boolean().describe('false = exit 1: an unwaived regression or a waiver that matched after its expiry'),
    base: SideSchema,
    head: SideSchema,
    summary: z.strictObject({
      regressions: z.number().int().describe('unwaived regressions: each one fails the gate'),
      waived: z.number().int(),
      improvements: z.number().int(),
      changed: z.number().int().describe('other changes (e.g. held → not-applicable): reported, not a failure'),
      unchanged: z.number().int(),
      expiredWaivers: z.number().int(),
      unusedWaivers: z.number().int(),
    }),
    policyDifferences: z
      .array(z.strictObject({ field: z.string(), base: z.string(), head: z.string() }))
      .describe('policy fields whose value differs between base and head (compact JSON values)'),
    changes: z.array(ChangeSchema),
    waivers: z.array(z.strictObject({ waiver: WaiverSchema, status: z.enum(['used', 'expired', 'unused']), matched: z.array(z.string()) })),
  })
  .meta({ id: 'sandcheck-gate-report', title: 'sandcheck policy-change gate (compare --base --head --json)' });
export type GateReport = z.infer<typeof GateReportSchema>;

export interface GateRun {
  dir: string;
  security: SecurityScorecard;
  task: TaskScorecard;
}

type Sv = SecurityResult['verdict'];

/** A security verdict change, by the rules of the gate (docs/reports.md, "Policy-change gate"). */
export function classifySecurity(base: Sv | null, head: Sv | null): ChangeClass {
  if (base === head) return 'unchanged';
  if (head === null) return 'regression';
  if (base === null) return head === 'crossed' || head === 'unenforced' ? 'regression' : 'changed';
  const worse = (b: Sv, h: Sv) =>
    (h === 'crossed' && b !== 'crossed') || (b === 'held' && h === 'inconclusive') || ((b === 'held' || b === 'not-applicable') && h === 'unenforced');
  return worse(base, head) ? 'regression' : worse(head, base) ? 'improvement' : 'changed';
}

type Outcome = TaskResult['outcome'];

export function classifyTask(base: Outcome | null, head: Outcome | null): ChangeClass {
  if (base === head) return 'unchanged';
  if (head === null) return 'regression';
  if (base === null) return head === 'unexpected' ? 'regression' : 'changed';
  if (base === 'as-expected') return 'regression';
  return head === 'as-expected' ? 'improvement' : 'changed';
}

const side = (r: GateRun): GateReport['base'] => ({
  dir: r.dir,
  backend: r.security.backend.name,
  ...(r.security.environment?.label !== undefined ? { label: r.security.environment.label } : {}),
  policy: r.security.policy.name,
  runId: r.security.run.id,
  security: r.security.summary,
  task: r.task.summary,
});

function byId<T extends { id: string }>(base: readonly T[], head: readonly T[]): { id: string; b: T | undefined; h: T | undefined }[] {
  const ids = [...new Set([...base.map((x) => x.id), ...head.map((x) => x.id)])];
  return ids.map((id) => ({ id, b: base.find((x) => x.id === id), h: head.find((x) => x.id === id) }));
}

/** One change per id in either run: labelled (verdict or outcome), classified, with the head's reason and evidence. */
function resultChanges<T extends { id: string; reason: string; evidence: Evidence[] }, L extends string>(
  kind: 'security' | 'task',
  base: readonly T[],
  head: readonly T[],
  label: (r: T) => L,
  classify: (b: L | null, h: L | null) => ChangeClass,
  reasonOf: (r: T) => string,
): Change[] {
  return byId(base, head).map(({ id, b, h }): Change => {
    const bl = b ? label(b) : null;
    const hl = h ? label(h) : null;
    return {
      kind,
      id,
      class: classify(bl, hl),
      base: bl,
      head: hl,
      reason: h ? reasonOf(h) : `missing in the head run (base: ${b?.reason ?? ''})`,
      evidence: (h ?? b)?.evidence ?? [],
      ...(h && hl ? { fingerprint: evidenceFingerprint({ verdict: hl, evidence: h.evidence }) } : {}),
    };
  });
}

/** Every change between two runs, before waivers: security verdicts, task outcomes, claimed policy items. */
export function classifyRuns(base: GateRun, head: GateRun): Change[] {
  const security = resultChanges(
    'security',
    base.security.results,
    head.security.results,
    (r) => r.verdict,
    classifySecurity,
    (r) => r.reason,
  );
  const task = resultChanges(
    'task',
    base.task.results,
    head.task.results,
    (r) => r.outcome,
    classifyTask,
    (r) => `expected ${r.expected}, got ${r.verdict ?? 'no verdict'}: ${r.reason}`,
  );
  const baseClaims = new Set(base.security.backend.enforces);
  const headClaims = new Set(head.security.backend.enforces);
  const claims = [...new Set([...baseClaims, ...headClaims])].map((item): Change => {
    const b = baseClaims.has(item) ? 'claimed' : 'not claimed';
    const h = headClaims.has(item) ? 'claimed' : 'not claimed';
    return {
      kind: 'claim',
      id: item,
      class: b === h ? 'unchanged' : b === 'claimed' ? 'regression' : 'improvement',
      base: b,
      head: h,
      reason: b === h ? `${b} in both runs` : `${head.security.backend.name} ${h === 'claimed' ? 'now claims' : 'no longer claims'} to enforce ${item}`,
      evidence: [],
    };
  });
  return [...security, ...task, ...claims];
}

/** What a waiver is held against for one change: a dropped claim also by the head results of the probes testing that item. */
function subjectsOf(c: Change, head: GateRun): WaiverSubject[] {
  const backend = head.security.backend.name;
  const own: WaiverSubject = { id: c.id, backend, ...(c.fingerprint ? { fingerprint: c.fingerprint } : {}) };
  if (c.kind !== 'claim') return [own];
  const testing = head.security.results.filter((r) => r.policyItem === c.id);
  return [own, ...testing.map((r) => ({ id: r.id, backend, fingerprint: evidenceFingerprint(r) }))];
}

const note = (w: Waiver) => ({ reason: w.reason, owner: w.owner, expires: w.expires });

const failingNow = (c: Change): boolean => c.class === 'regression' || c.head === 'crossed' || c.head === 'unenforced' || c.head === 'unexpected';

/** The gate: regressions a live waiver matches are waived; a waiver matched after its day fails; unused ones are listed. */
export function gateReport(base: GateRun, head: GateRun, waivers: readonly Waiver[] = [], today: string = utcDay()): GateReport {
  const changes = classifyRuns(base, head).map((c): Change => {
    if (!failingNow(c)) return c;
    const subjects = subjectsOf(c, head);
    const live = subjects.map((s) => liveWaiverFor(waivers, s, today)).find((w) => w !== undefined);
    const expired = waivers.find((w) => isExpired(w, today) && subjects.some((s) => waiverMatches(w, s)));
    return { ...c, ...(live && c.class === 'regression' ? { waiver: note(live) } : {}), ...(expired && !live ? { expiredWaiver: note(expired) } : {}) };
  });
  // A waiver is in use while what it accepts still fails in the head run (a regression or a standing crossing).
  const uses = waiverUses(
    waivers,
    changes.filter(failingNow).flatMap((c) => subjectsOf(c, head)),
    today,
  );
  const count = (k: ChangeClass) => changes.filter((c) => c.class === k).length;
  const regressions = changes.filter((c) => c.class === 'regression' && !c.waiver).length;
  const expiredWaivers = uses.filter((u) => u.status === 'expired').length;
  return {
    report: 'gate',
    version: GATE_REPORT_VERSION,
    today,
    passed: regressions === 0 && expiredWaivers === 0,
    base: side(base),
    head: side(head),
    summary: {
      regressions,
      waived: changes.filter((c) => c.waiver).length,
      improvements: count('improvement'),
      changed: count('changed'),
      unchanged: count('unchanged'),
      expiredWaivers,
      unusedWaivers: uses.filter((u) => u.status === 'unused').length,
    },
    policyDifferences: policyDifferences([base.security.policy, head.security.policy]).map((d) => ({
      field: d.field,
      base: d.values[0] ?? '–',
      head: d.values[1] ?? '–',
    })),
    changes,
    waivers: uses.map((u) => ({ waiver: u.waiver, status: u.status, matched: u.matched })),
  };
}
