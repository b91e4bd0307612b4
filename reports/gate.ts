import { z } from 'zod';
import { visibleLine } from '../core/clean-text.js';
import { POLICY_ITEMS, type PolicyItem } from '../model/backend-contract.js';
import type { RunEnvironment } from '../model/environment.js';
import type { Evidence } from '../model/evidence.js';
import { parseAllowEntry } from '../model/network-allow.js';
import type { Policy } from '../model/policy.js';
import { policyRequires } from '../model/required-items.js';
import type { SecurityResult, SecurityScorecard, TaskResult, TaskScorecard } from '../model/scorecard.js';
import { SecuritySummarySchema, TaskSummarySchema } from '../model/scorecard.js';
import { Severity } from '../model/verdict.js';
import { WaiverNoteSchema, WaiverSchema, type Waiver } from '../model/waiver.js';
import { policyDifferences, policyLeaves } from './compare.js';
import { evidenceFingerprint, isExpired, liveWaiverFor, utcDay, waiverMatches, waiverUses, type WaiverSubject } from '../harness/waivers.js';

/** 1.1.0: policy loosenings (`kind: policy`), backend configuration changes (`kind: config`, `backendConfig`), `--fail-on`, `--exclude`. */
export const GATE_REPORT_VERSION = '1.1.0';

const ChangeClass = z.enum(['regression', 'improvement', 'changed', 'unchanged']);
export type ChangeClass = z.infer<typeof ChangeClass>;

const ChangeSchema = z.strictObject({
  kind: z
    .enum(['security', 'task', 'claim', 'policy', 'config'])
    .describe(
      'a probe verdict, a task case outcome, a policy item the backend claims to enforce, a policy field (looser = regression, tighter = improvement), or the backend configuration',
    ),
  id: z.string().describe('probe id, task case id, policy item (claim), dotted policy field (policy), or `backend-config`'),
  class: ChangeClass,
  base: z
    .string()
    .nullable()
    .describe('verdict (security), outcome (task), claimed / not claimed, the policy value as compact JSON, or the backend config; null = absent'),
  head: z.string().nullable(),
  reason: z.string().describe("the head result's reason (the base's when the head has none); for a policy field, which way it moved and why"),
  evidence: z.array(z.strictObject({ source: z.enum(['outside', 'inside']), witness: z.string(), where: z.string().optional(), detail: z.string() })),
  severity: Severity.optional().describe("security: the probe's severity (the head's, the base's when the head has none), what --fail-on compares"),
  policyItem: z.string().optional().describe('the policy item the probe tests or the policy field sets'),
  fingerprint: z.string().optional().describe("the head result's outside-evidence fingerprint, for a waiver's `fingerprint`"),
  belowFailOn: z.literal(true).optional().describe('a security finding below --fail-on: reported, not a failure'),
  waiver: WaiverNoteSchema.optional().describe('a live waiver accepts this regression: reported, not a failure'),
  expiredWaiver: WaiverNoteSchema.optional().describe('a waiver matched this change after its expiry day: a failure (unless below --fail-on)'),
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

const ConfigSideSchema = z.strictObject({
  file: z.string(),
  sha256: z.string().describe('of the whole file'),
  optionsSha256: z.string().optional().describe('of the options the backend applied'),
});

/** How many differing option paths the report lists at most. */
export const OPTION_DIFFERENCES_MAX = 100;

const BackendConfigDiffSchema = z.strictObject({
  changed: z
    .boolean()
    .describe('the applied options differ (optionsSha256), or, where a side recorded no options, the file differs; a config on one side only is a change too'),
  base: ConfigSideSchema.nullable().describe('null: the run had no --backend-config (the backend ran on its defaults)'),
  head: ConfigSideSchema.nullable(),
  optionsCompared: z.boolean().describe('both sides recorded their applied `options`: `options` lists every path that differs'),
  options: z
    .array(z.strictObject({ path: z.string(), base: z.string(), head: z.string() }))
    .describe(`option paths whose value differs (compact JSON, \`–\` = absent), at most ${OPTION_DIFFERENCES_MAX}`),
});

export const FailOnSchema = Severity.describe('--fail-on: security findings of a lower severity are reported and do not fail the gate');
export type FailOn = z.infer<typeof FailOnSchema>;

export const GateReportSchema = z
  .strictObject({
    report: z.literal('gate'),
    version: z.literal(GATE_REPORT_VERSION),
    today: z.iso.date().describe('the UTC day waiver expiry was judged against'),
    passed: z
      .boolean()
      .describe(
        'false = exit 1: an unwaived regression (a security one at or above --fail-on, any task, claim or policy one) or a waiver that matched after its expiry',
      ),
    failOn: FailOnSchema,
    excluded: z
      .array(z.strictObject({ pattern: z.string(), matched: z.array(z.string()) }))
      .describe('--exclude: each pattern (probe or case id, category, policy item) and the probes and cases it left out of the gate'),
    base: SideSchema,
    head: SideSchema,
    summary: z.strictObject({
      regressions: z.number().int().describe('unwaived regressions that fail the gate'),
      policyLoosened: z.number().int().describe('policy fields the head loosened (regressions, waived ones included)'),
      claimsDropped: z.number().int().describe("policy items the base's backend claimed and the head's does not (waived ones included)"),
      belowFailOn: z.number().int().describe('security regressions below --fail-on: reported, not a failure'),
      waived: z.number().int(),
      improvements: z.number().int(),
      changed: z.number().int().describe('other changes (e.g. held → not-applicable, a policy name): reported, not a failure'),
      unchanged: z.number().int(),
      expiredWaivers: z.number().int().describe('waivers that matched after their expiry day something that fails the gate'),
      unusedWaivers: z.number().int(),
    }),
    policyDifferences: z
      .array(z.strictObject({ field: z.string(), base: z.string(), head: z.string() }))
      .describe('policy fields whose value differs between base and head (compact JSON values); judged in `changes` (kind policy)'),
    backendConfig: BackendConfigDiffSchema.describe("the two runs' --backend-config as their cards recorded it (environment.backendConfig)"),
    changes: z.array(ChangeSchema),
    waivers: z.array(
      z.strictObject({
        waiver: WaiverSchema,
        status: z.enum(['used', 'expired', 'unused']),
        matched: z.array(z.string()),
        fingerprintNow: z
          .array(z.string().max(64))
          .max(20)
          .optional()
          .describe("an unused fingerprinted waiver whose probe still fails: the finding's fingerprint now"),
      }),
    ),
  })
  .meta({ id: 'sandcheck-gate-report', title: 'sandcheck policy-change gate (compare --base --head --json)' });
export type GateReport = z.infer<typeof GateReportSchema>;

export interface GateRun {
  dir: string;
  security: SecurityScorecard;
  task: TaskScorecard;
}

export interface GateOptions {
  /** Security regressions below this severity are reported, not failures (default low: every one fails). */
  failOn?: FailOn;
  /** Probe or task case ids, categories or policy items left out of the gate. */
  exclude?: readonly string[];
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

// ---------------------------------------------------------------------------------------------------------------
// Policy fields: which way is looser (docs/reports.md, "Policy-change gate"). Every field of model/policy.ts has a
// rule here; a field without one (a name, or one added later) is listed as `changed`, never silently passed.

/** Which way a policy field moved: looser (a regression), tighter (an improvement), or changed (no direction). */
export type PolicyDirection = 'looser' | 'tighter' | 'changed';

export interface PolicyFieldChange {
  field: string;
  item?: PolicyItem;
  direction: PolicyDirection;
  base: string;
  head: string;
  why: string;
}

/** Numeric limits: a higher value allows more, so it is looser. */
export const HIGHER_IS_LOOSER: Readonly<Record<string, { item?: PolicyItem; what: string }>> = {
  'resources.cpus': { item: 'resources.cpus', what: 'more CPU for each box' },
  'resources.memoryMb': { item: 'resources.memoryMb', what: 'more memory for each box' },
  'resources.wallSeconds': { item: 'resources.wallSeconds', what: 'a program may run longer' },
  'resources.processes': { item: 'resources.processes', what: 'more processes in each box' },
  'resources.diskMb': { item: 'resources.diskMb', what: 'more disk for each box' },
  'resources.wallToleranceMs': { item: 'resources.wallSeconds', what: 'a box may stop a program later and still count as holding the wall limit' },
  'exports.maxFiles': { item: 'exports.limits', what: 'more files per export' },
  'exports.maxFileMb': { item: 'exports.limits', what: 'larger files in an export' },
  'exports.maxTotalMb': { item: 'exports.limits', what: 'a larger export' },
  'output.maxBytes': { item: 'output.maxBytes', what: 'more stdout and stderr per execution' },
  'attempts.corrections': { what: 'more attempts, and a longer budget, per task' },
  'attempts.queueStartupSeconds': { what: 'a longer wait for the queue and startup, and a longer budget' },
};

/** Controls that are on when true: switching one off is looser. */
export const TRUE_IS_STRICTER: Readonly<Record<string, { item: PolicyItem; what: string }>> = {
  'files.readOnlyInput': { item: 'files.readOnlyInput', what: 'inputs may be changed by the program' },
  'identity.unprivileged': { item: 'identity.unprivileged', what: 'the box may run privileged' },
  'lifecycle.freshEnvironment': { item: 'lifecycle.freshEnvironment', what: 'an execution may see what an earlier one left' },
  'lifecycle.destroyAfter': { item: 'lifecycle.destroyAfter', what: 'a box may outlive its execution' },
  'isolation.separateKernel': { item: 'isolation.separateKernel', what: "the box may run on the host's kernel" },
};

/** Settings with named values, strictest first: a later value is looser. A value not listed has no direction. */
export const STRICTEST_FIRST: Readonly<Record<string, { item: PolicyItem; order: readonly string[] }>> = {
  'files.hostPaths': { item: 'files.hostPaths', order: ['none'] },
  'identity.hostCredentials': { item: 'identity.hostCredentials', order: ['none'] },
  'network.mode': { item: 'network.egress', order: ['off', 'allowlist'] },
  'posture.seccomp': { item: 'posture.seccomp', order: ['required', 'any'] },
  'posture.capabilityBounding': { item: 'posture.capabilityBounding', order: ['no-dangerous', 'any'] },
  'posture.devices': { item: 'posture.devices', order: ['none', 'any'] },
};

/**
 * Lists: `network.allow`, `posture.hostMounts` and `files.writeScope` allow what they list (more = looser; an unset
 * write scope asks nothing); `posture.namespaces`, `files.protected` and `files.denyRead` require it (fewer = looser).
 */
const LIST_FIELDS = ['network.allow', 'posture.namespaces', 'posture.hostMounts', 'files.writeScope', 'files.protected', 'files.denyRead'] as const;
/** Every policy field with a direction rule. */
export const RULED_POLICY_FIELDS: readonly string[] = [
  ...Object.keys(HIGHER_IS_LOOSER),
  ...Object.keys(TRUE_IS_STRICTER),
  ...Object.keys(STRICTEST_FIRST),
  ...LIST_FIELDS,
];
/** Fields with no way to call looser. */
const NO_DIRECTION: Readonly<Record<string, string>> = { name: 'a name: no direction' };

/** A policy without `posture` asks for none of its items; without `isolation`, for no separate kernel. */
const POSTURE_UNASKED = { namespaces: [], hostMounts: 'any', seccomp: 'any', capabilityBounding: 'any', devices: 'any' } as const;

function normalisedPolicy(p: Policy): Record<string, unknown> {
  return {
    ...p,
    resources: { ...p.resources, wallToleranceMs: p.resources.wallToleranceMs ?? 1000 },
    files: { ...p.files, protected: p.files.protected ?? [], denyRead: p.files.denyRead ?? [] },
    posture: p.posture ?? POSTURE_UNASKED,
    isolation: p.isolation ?? { separateKernel: false },
  };
}

function valueAt(root: unknown, field: string): unknown {
  let v: unknown = root;
  for (const k of field.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** One line, cleaned, at most `max` characters. */
const clip = (text: string, max: number): string => {
  const line = visibleLine(text);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

const compact = (v: unknown, max = 200): string => clip(v === undefined ? '–' : (JSON.stringify(v) ?? '–'), max);

/** The value as the card has it; a field the card leaves out shows the value it stands for. */
function shown(raw: Policy, norm: Record<string, unknown>, field: string): string {
  const v = valueAt(raw, field);
  return v !== undefined ? compact(v) : `${compact(valueAt(norm, field))} (not set)`;
}

const listed = (xs: readonly string[], max = 8): string =>
  `${xs
    .slice(0, max)
    .map((x) => visibleLine(x).slice(0, 128))
    .join(', ')}${xs.length > max ? ` and ${xs.length - max} more` : ''}`;

/**
 * A list field judged by its entries: those in `from` and not in `to` loosen the policy, those in `to` and not in
 * `from` tighten it. Allow lists pass (head, base): an added entry allows more; required lists (base, head): a
 * dropped entry asks less.
 */
function entriesChange(
  field: string,
  item: PolicyItem,
  from: readonly string[],
  to: readonly string[],
  words: { looser: string; tighter: string; same: string },
): Omit<PolicyFieldChange, 'base' | 'head'> {
  const loosening = from.filter((x) => !to.includes(x));
  const tightening = to.filter((x) => !from.includes(x));
  if (loosening.length)
    return {
      field,
      item,
      direction: 'looser',
      why: `${words.looser}${listed(loosening)}${tightening.length ? `; ${words.tighter}${listed(tightening)}` : ''}`,
    };
  return {
    field,
    item,
    direction: tightening.length ? 'tighter' : 'changed',
    why: tightening.length ? `${words.tighter}${listed(tightening)}` : words.same,
  };
}

/** Required lists judged entry by entry, each its own policy item: base → head, a dropped entry asks less. */
const ENTRY_WORDS = {
  'files.protected': { looser: 'paths no longer protected: ', tighter: 'newly protected: ', same: 'the same paths, in another order' },
  'files.denyRead': { looser: 'files no longer denied to reads: ', tighter: 'newly denied to reads: ', same: 'the same globs, in another order' },
  'posture.namespaces': { looser: 'namespaces no longer required of the box: ', tighter: 'newly required: ', same: 'the same namespaces, in another order' },
} as const satisfies Partial<Record<PolicyItem, { looser: string; tighter: string; same: string }>>;

/** One network.allow entry as the rule it is (`1.2.3.4:80` and `tcp:1.2.3.4:80` are the same rule). */
function allowKey(entry: string): string {
  const r = parseAllowEntry(entry);
  return r.ok ? `${r.rule.proto} ${r.rule.address}/${r.rule.prefix} ${r.rule.port ?? '*'}` : entry;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function listChange(
  field: (typeof LIST_FIELDS)[number],
  b: unknown,
  h: unknown,
  bp: Record<string, unknown>,
  hp: Record<string, unknown>,
): Omit<PolicyFieldChange, 'base' | 'head'> {
  if (field === 'posture.hostMounts') {
    // none (only the runtime's own) < { allow: [...] } (those plus the listed prefixes) < any (not judged).
    const rank = (v: unknown) =>
      v === 'none' ? 0 : v === 'any' ? 2 : v !== null && typeof v === 'object' && Array.isArray((v as { allow?: unknown }).allow) ? 1 : -1;
    const [rb, rh] = [rank(b), rank(h)];
    const item = 'posture.hostMounts' as const;
    if (rb < 0 || rh < 0) return { field, item, direction: 'changed', why: 'a value with no known order' };
    if (rb !== rh)
      return { field, item, direction: rh > rb ? 'looser' : 'tighter', why: rh > rb ? 'more host mounts allowed in the box' : 'fewer host mounts allowed' };
    const [xb, xh] = [strings((b as { allow?: unknown }).allow), strings((h as { allow?: unknown }).allow)];
    return entriesChange(field, item, xh, xb, {
      looser: 'host paths allowed in the box: added ',
      tighter: 'removed ',
      same: 'the same prefixes, written differently',
    });
  }
  const [xb, xh] = [strings(b), strings(h)];
  if (field === 'files.writeScope') {
    const item = 'files.writeScope' as const;
    if (h === undefined) return { field, item, direction: 'looser', why: 'the write scope is no longer asked: the box may write anywhere it can' };
    if (b === undefined) return { field, item, direction: 'tighter', why: `a write scope is now asked: ${listed(xh)}` };
    return entriesChange(field, item, xh, xb, { looser: 'roots the box may write: added ', tighter: 'removed ', same: 'the same roots, in another order' });
  }
  const words = ENTRY_WORDS[field as keyof typeof ENTRY_WORDS];
  if (words) return entriesChange(field, field as keyof typeof ENTRY_WORDS, xb, xh, words);
  // network.allow: what an entry allows only counts while network.mode is allowlist.
  const item = 'network.egress' as const;
  const [kb, kh] = [new Set(xb.map(allowKey)), new Set(xh.map(allowKey))];
  const added = xh.filter((x) => !kb.has(allowKey(x)));
  const removed = xb.filter((x) => !kh.has(allowKey(x)));
  const live = (p: Record<string, unknown>) => valueAt(p, 'network.mode') === 'allowlist';
  if (added.length && live(hp))
    return {
      field,
      item,
      direction: 'looser',
      why: `destinations the box may reach: added ${listed(added)}${removed.length ? `; removed ${listed(removed)}` : ''}`,
    };
  if (added.length) return { field, item, direction: 'changed', why: `added ${listed(added)}, with no effect while network.mode is off` };
  if (removed.length && live(bp)) return { field, item, direction: 'tighter', why: `removed ${listed(removed)}` };
  if (removed.length) return { field, item, direction: 'changed', why: `removed ${listed(removed)}, which had no effect while network.mode was off` };
  return { field, item, direction: 'changed', why: 'the same destinations, written differently' };
}

/** Every policy field that differs between base and head, each judged looser, tighter or (no direction) changed. */
export function policyChanges(base: Policy, head: Policy): PolicyFieldChange[] {
  const [bn, hn] = [normalisedPolicy(base), normalisedPolicy(head)];
  const out: PolicyFieldChange[] = [];
  const push = (c: Omit<PolicyFieldChange, 'base' | 'head'>) => out.push({ ...c, base: shown(base, bn, c.field), head: shown(head, hn, c.field) });
  const differs = (field: string) => JSON.stringify(valueAt(bn, field)) !== JSON.stringify(valueAt(hn, field));

  for (const [field, rule] of Object.entries(HIGHER_IS_LOOSER)) {
    if (!differs(field)) continue;
    const [b, h] = [valueAt(bn, field), valueAt(hn, field)];
    const item = rule.item ? { item: rule.item } : {};
    if (typeof b !== 'number' || typeof h !== 'number') push({ field, ...item, direction: 'changed', why: 'not a number on both sides' });
    else if (h > b) push({ field, ...item, direction: 'looser', why: `raised: ${rule.what}` });
    else push({ field, ...item, direction: 'tighter', why: 'lowered' });
  }
  for (const [field, rule] of Object.entries(TRUE_IS_STRICTER)) {
    if (!differs(field)) continue;
    const [b, h] = [valueAt(bn, field), valueAt(hn, field)];
    if (typeof b !== 'boolean' || typeof h !== 'boolean') push({ field, item: rule.item, direction: 'changed', why: 'not a boolean on both sides' });
    else push({ field, item: rule.item, ...(h ? { direction: 'tighter', why: 'switched on' } : { direction: 'looser', why: `switched off: ${rule.what}` }) });
  }
  for (const [field, rule] of Object.entries(STRICTEST_FIRST)) {
    if (!differs(field)) continue;
    const [b, h] = [rule.order.indexOf(String(valueAt(bn, field))), rule.order.indexOf(String(valueAt(hn, field)))];
    if (b < 0 || h < 0) push({ field, item: rule.item, direction: 'changed', why: 'a value with no known order' });
    else push({ field, item: rule.item, direction: h > b ? 'looser' : 'tighter', why: h > b ? 'a less strict setting' : 'a stricter setting' });
  }
  for (const field of LIST_FIELDS) if (differs(field)) push(listChange(field, valueAt(bn, field), valueAt(hn, field), bn, hn));

  // Anything else that differs: a name, or a field this gate has no rule for yet.
  const covered = (leaf: string) => RULED_POLICY_FIELDS.some((f) => leaf === f || leaf.startsWith(`${f}.`));
  const [lb, lh] = [policyLeaves(bn), policyLeaves(hn)];
  for (const leaf of [...new Set([...lb.keys(), ...lh.keys()])].sort()) {
    if (covered(leaf) || lb.get(leaf) === lh.get(leaf)) continue;
    push({ field: leaf, direction: 'changed', why: NO_DIRECTION[leaf] ?? 'no rule says which way is looser' });
  }

  // A required item the head no longer asks for: named on its field's change, or on its own when no field shows it.
  for (const item of POLICY_ITEMS) {
    if (!policyRequires(base, item) || policyRequires(head, item)) continue;
    const own = out.find((c) => c.item === item && c.direction === 'looser');
    if (own) own.why = `${own.why}; ${item} is no longer required`;
    else out.push({ field: item, item, direction: 'looser', base: 'required', head: 'not required', why: `${item} is no longer required` });
  }
  return out.sort((a, b) => a.field.localeCompare(b.field));
}

// ---------------------------------------------------------------------------------------------------------------
// The backend configuration (environment.backendConfig).

type ConfigRecord = NonNullable<RunEnvironment['backendConfig']>;

const configOf = (r: GateRun): ConfigRecord | undefined => r.security.environment?.backendConfig;

function configSide(c: ConfigRecord | undefined): z.infer<typeof ConfigSideSchema> | null {
  return c ? { file: visibleLine(c.file).slice(0, 256), sha256: c.sha256, ...(c.optionsSha256 ? { optionsSha256: c.optionsSha256 } : {}) } : null;
}

export function backendConfigDiff(base: GateRun, head: GateRun): GateReport['backendConfig'] {
  const [b, h] = [configOf(base), configOf(head)];
  const key = (c: ConfigRecord | undefined) => (c === undefined ? 'none' : c.optionsSha256 !== undefined ? `options ${c.optionsSha256}` : `file ${c.sha256}`);
  const optionsCompared = b !== undefined && h !== undefined && b.options !== undefined && h.options !== undefined;
  const options: GateReport['backendConfig']['options'] = [];
  if (optionsCompared) {
    const leaves = (o: unknown) =>
      o !== null && typeof o === 'object' && !Array.isArray(o) ? policyLeaves(o) : new Map([['(options)', JSON.stringify(o) ?? '–']]);
    const [lb, lh] = [leaves(b.options), leaves(h.options)];
    for (const path of [...new Set([...lb.keys(), ...lh.keys()])].sort()) {
      const [vb, vh] = [lb.get(path) ?? '–', lh.get(path) ?? '–'];
      if (vb !== vh) options.push({ path: clip(path, 128), base: clip(vb, 120), head: clip(vh, 120) });
    }
  }
  return {
    changed: key(b) !== key(h),
    base: configSide(b),
    head: configSide(h),
    optionsCompared,
    options: options.slice(0, OPTION_DIFFERENCES_MAX),
  };
}

/** `no-pids.yaml (options 0123456789ab)`, or `none (defaults)`. */
export const configLabel = (c: GateReport['backendConfig']['base']): string =>
  c ? `${c.file} (${c.optionsSha256 ? `options ${c.optionsSha256.slice(0, 12)}` : `file ${c.sha256.slice(0, 12)}`})` : 'none (defaults)';

function configChange(d: GateReport['backendConfig']): Change {
  const moved = d.options.map((o) => `${o.path} ${o.base} → ${o.head}`);
  const reason = d.optionsCompared
    ? moved.length
      ? `applied options differ: ${listed(moved, 12)}`
      : 'the applied options are the same'
    : d.base === null || d.head === null
      ? `only the ${d.base ? 'base' : 'head'} ran with a --backend-config: the other ran on the backend's defaults`
      : d.base.optionsSha256 !== undefined && d.head.optionsSha256 !== undefined
        ? 'the applied options differ but were too large to keep in a card: compare the files'
        : `the ${d.base.optionsSha256 === undefined ? 'base' : 'head'} card recorded no applied options: compare the files`;
  return { kind: 'config', id: 'backend-config', class: 'changed', base: configLabel(d.base), head: configLabel(d.head), reason, evidence: [] };
}

// ---------------------------------------------------------------------------------------------------------------

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
function resultChanges<
  T extends { id: string; reason: string; evidence: Evidence[]; policyItem: string; severity?: SecurityResult['severity'] },
  L extends string,
>(
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
    const severity = h?.severity ?? b?.severity;
    return {
      kind,
      id,
      class: classify(bl, hl),
      base: bl,
      head: hl,
      reason: h ? reasonOf(h) : `missing in the head run (base: ${b?.reason ?? ''})`,
      evidence: (h ?? b)?.evidence ?? [],
      ...(severity ? { severity } : {}),
      ...((h ?? b)?.policyItem !== undefined ? { policyItem: (h ?? b)?.policyItem } : {}),
      ...(h && hl ? { fingerprint: evidenceFingerprint({ verdict: hl, evidence: h.evidence }) } : {}),
    };
  });
}

/** Every change between two runs, before waivers: security verdicts, task outcomes, claimed policy items, policy fields, backend config. */
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
  const config = backendConfigDiff(base, head);
  const configNote = config.changed ? `; backend config ${configLabel(config.base)} → ${configLabel(config.head)}` : '';
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
      reason:
        b === h ? `${b} in both runs` : `${head.security.backend.name} ${h === 'claimed' ? 'now claims' : 'no longer claims'} to enforce ${item}${configNote}`,
      evidence: [],
      policyItem: item,
    };
  });
  const policy = policyChanges(base.security.policy, head.security.policy).map((p): Change => ({
    kind: 'policy',
    id: p.field,
    class: p.direction === 'looser' ? 'regression' : p.direction === 'tighter' ? 'improvement' : 'changed',
    base: p.base,
    head: p.head,
    reason: `${p.direction}: ${p.why}`,
    evidence: [],
    ...(p.item ? { policyItem: p.item } : {}),
  }));
  return [...policy, ...(config.changed ? [configChange(config)] : []), ...claims, ...security, ...task];
}

/** What a waiver is held against for one change: a dropped claim also by the head results of the probes testing that item. */
function subjectsOf(c: Change, head: GateRun): WaiverSubject[] {
  const backend = head.security.backend.name;
  const own: WaiverSubject = { id: c.id, backend, ...(c.fingerprint ? { fingerprint: c.fingerprint } : {}) };
  // A loosened policy field: a waiver naming the field or the policy item it sets.
  if (c.kind === 'policy') return [own, ...(c.policyItem && c.policyItem !== c.id ? [{ id: c.policyItem, backend }] : [])];
  if (c.kind !== 'claim') return [own];
  const testing = head.security.results.filter((r) => r.policyItem === c.id);
  return [own, ...testing.map((r) => ({ id: r.id, backend, fingerprint: evidenceFingerprint(r) }))];
}

const note = (w: Waiver) => ({ reason: w.reason, owner: w.owner, expires: w.expires });

const failingNow = (c: Change): boolean =>
  c.class === 'regression' || ((c.kind === 'security' || c.kind === 'task') && (c.head === 'crossed' || c.head === 'unenforced' || c.head === 'unexpected'));

const SEVERITY_RANK: Record<FailOn, number> = { low: 0, medium: 1, high: 2, critical: 3 };

/** Whether a failing change fails the gate at this threshold: only security findings have a severity to hold against it. */
const gates = (c: Change, failOn: FailOn): boolean => c.kind !== 'security' || c.severity === undefined || SEVERITY_RANK[c.severity] >= SEVERITY_RANK[failOn];

/** Leaves out of both runs the probes and task cases an --exclude pattern names (by id, category or policy item). */
function excludeFrom(run: GateRun, patterns: readonly string[], matched: Map<string, Set<string>>): GateRun {
  const hit = (id: string, tags: readonly string[]): boolean => {
    const by = patterns.filter((p) => p === id || tags.includes(p));
    for (const p of by) matched.get(p)?.add(id);
    return by.length > 0;
  };
  if (patterns.length === 0) return run;
  return {
    ...run,
    security: { ...run.security, results: run.security.results.filter((r) => !hit(r.id, [r.category, r.policyItem])) },
    task: { ...run.task, results: run.task.results.filter((r) => !hit(r.id, [r.policyItem])) },
  };
}

/**
 * The gate: regressions a live waiver matches are waived; a waiver matched after its day fails; unused ones are listed.
 * Security regressions below `failOn` are reported, not failures; task, claim and policy regressions always count.
 */
export function gateReport(base: GateRun, head: GateRun, waivers: readonly Waiver[] = [], today: string = utcDay(), options: GateOptions = {}): GateReport {
  const failOn = options.failOn ?? 'low';
  const patterns = [...new Set(options.exclude ?? [])];
  const matched = new Map(patterns.map((p) => [p, new Set<string>()]));
  const [b, h] = [excludeFrom(base, patterns, matched), excludeFrom(head, patterns, matched)];
  const changes = classifyRuns(b, h).map((c): Change => {
    if (!failingNow(c)) return c;
    const subjects = subjectsOf(c, h);
    const live = subjects.map((s) => liveWaiverFor(waivers, s, today)).find((w) => w !== undefined);
    const expired = waivers.find((w) => isExpired(w, today) && subjects.some((s) => waiverMatches(w, s)));
    return {
      ...c,
      ...(gates(c, failOn) ? {} : { belowFailOn: true as const }),
      ...(live && c.class === 'regression' ? { waiver: note(live) } : {}),
      ...(expired && !live ? { expiredWaiver: note(expired) } : {}),
    };
  });
  // A waiver is in use while what it accepts still fails in the head run (a regression or a standing crossing).
  const uses = waiverUses(
    waivers,
    changes.filter(failingNow).flatMap((c) => subjectsOf(c, h)),
    today,
  );
  // An expired waiver fails the gate only through what would fail it at this --fail-on.
  const gatingExpired = waiverUses(
    waivers,
    changes.filter((c) => failingNow(c) && !c.belowFailOn).flatMap((c) => subjectsOf(c, h)),
    today,
  ).filter((u) => u.status === 'expired').length;
  const count = (k: ChangeClass) => changes.filter((c) => c.class === k).length;
  const regressions = changes.filter((c) => c.class === 'regression' && !c.waiver && !c.belowFailOn).length;
  return {
    report: 'gate',
    version: GATE_REPORT_VERSION,
    today,
    passed: regressions === 0 && gatingExpired === 0,
    failOn,
    excluded: patterns.map((pattern) => ({ pattern, matched: [...(matched.get(pattern) ?? [])].sort() })),
    base: side(base),
    head: side(head),
    summary: {
      regressions,
      policyLoosened: changes.filter((c) => c.kind === 'policy' && c.class === 'regression').length,
      claimsDropped: changes.filter((c) => c.kind === 'claim' && c.class === 'regression').length,
      belowFailOn: changes.filter((c) => c.class === 'regression' && c.belowFailOn && !c.waiver).length,
      waived: changes.filter((c) => c.waiver).length,
      improvements: count('improvement'),
      changed: count('changed'),
      unchanged: count('unchanged'),
      expiredWaivers: gatingExpired,
      unusedWaivers: uses.filter((u) => u.status === 'unused').length,
    },
    policyDifferences: policyDifferences([base.security.policy, head.security.policy]).map((d) => ({
      field: d.field,
      base: d.values[0] ?? '–',
      head: d.values[1] ?? '–',
    })),
    backendConfig: backendConfigDiff(base, head),
    changes,
    waivers: uses.map((u) => ({ waiver: u.waiver, status: u.status, matched: u.matched, ...(u.fingerprintNow ? { fingerprintNow: u.fingerprintNow } : {}) })),
  };
}
