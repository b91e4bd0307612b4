import { createHash } from 'node:crypto';
import { readConfigFile } from '../core/config-file.js';
import { SandcheckError } from '../core/errors.js';
import type { Evidence } from '../model/evidence.js';
import type { SecurityResult } from '../model/scorecard.js';
import { WaiverListSchema, WaiversObjectSchema, type Waiver } from '../model/waiver.js';
import { formatIssues } from './policy-loader.js';
import { visibleLine } from '../core/clean-text.js';

/** A waivers file (YAML or JSON), checked against its schema; errors name the file and the field (exit 3). */
export async function loadWaivers(path: string): Promise<Waiver[]> {
  const doc = await readConfigFile(path);
  // The branch of WaiversFileSchema the document is shaped for, so that errors name the field, not the union.
  const parsed = Array.isArray(doc) ? WaiverListSchema.safeParse(doc) : WaiversObjectSchema.safeParse(doc);
  if (!parsed.success) {
    throw new SandcheckError('CONFIG_INVALID', `invalid waivers file\n${formatIssues(parsed.error, doc, path)}`, {
      hint: 'each waiver needs probe, reason, owner and expires (YYYY-MM-DD); backend and fingerprint are optional (schema: reports/schema/waivers.schema.json)',
    });
  }
  return Array.isArray(parsed.data) ? parsed.data : parsed.data.waivers;
}

/** Today as YYYY-MM-DD in UTC: a waiver is live through the whole of its `expires` day. */
export const utcDay = (now: Date = new Date()): string => now.toISOString().slice(0, 10);

export const isExpired = (w: Waiver, today: string): boolean => w.expires < today;

// Numbers, hex runs and long random-looking tokens (run ids, canaries, pids, timings) change from run to
// run; without them the same evidence in another run gets the same fingerprint.
const normalise = (text: string): string => text.replace(/[A-Za-z0-9+/=_-]{24,}/g, '*').replace(/[0-9a-f]*[0-9][0-9a-f]*/gi, '#');

/** The first 16 hex characters of a sha256 over the verdict and the (normalised) outside evidence. */
export function evidenceFingerprint(result: { verdict: string; evidence: readonly Evidence[] }): string {
  const lines = result.evidence.filter((e) => e.source === 'outside').map((e) => normalise(`${e.witness}\u0000${e.where ?? ''}\u0000${e.detail}`));
  const canonical = JSON.stringify([result.verdict, [...new Set(lines)].sort()]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** What a waiver is held against: a result (or a dropped claim) under a backend. */
export interface WaiverSubject {
  id: string;
  backend: string;
  /** Absent for what has no result (a missing probe, a dropped claim): a fingerprinted waiver never matches it. */
  fingerprint?: string;
}

export function waiverMatches(w: Waiver, s: WaiverSubject): boolean {
  if (w.probe !== s.id) return false;
  if (w.backend !== undefined && w.backend !== s.backend) return false;
  return w.fingerprint === undefined || w.fingerprint === s.fingerprint;
}

/** How one waiver fared: live and matched (used), matched after its day (expired: a failure), or matched nothing. */
export interface WaiverUse {
  waiver: Waiver;
  status: 'used' | 'expired' | 'unused';
  /** The ids it matched. */
  matched: string[];
  /**
   * An unused waiver with a fingerprint whose probe (on its backend) still fails, with other outside evidence: the
   * fingerprints that evidence has now. The finding may be the same one, seen a little differently.
   */
  fingerprintNow?: string[];
}

export function waiverUses(waivers: readonly Waiver[], subjects: readonly WaiverSubject[], today: string): WaiverUse[] {
  return waivers.map((waiver): WaiverUse => {
    const matched = [...new Set(subjects.filter((s) => waiverMatches(waiver, s)).map((s) => s.id))];
    if (matched.length > 0) return { waiver, matched, status: isExpired(waiver, today) ? 'expired' : 'used' };
    const unfingerprinted = { ...waiver, fingerprint: undefined };
    const now =
      waiver.fingerprint === undefined
        ? []
        : [...new Set(subjects.flatMap((s) => (s.fingerprint !== undefined && waiverMatches(unfingerprinted, s) ? [s.fingerprint] : [])))].sort();
    return { waiver, matched, status: 'unused', ...(now.length > 0 ? { fingerprintNow: now } : {}) };
  });
}

/** The first live waiver matching the subject, if any. */
export function liveWaiverFor(waivers: readonly Waiver[], s: WaiverSubject, today: string): Waiver | undefined {
  return waivers.find((w) => !isExpired(w, today) && waiverMatches(w, s));
}

const FAILING: ReadonlySet<SecurityResult['verdict']> = new Set(['crossed', 'unenforced']);

/**
 * A run's own card: each crossed (or unenforced) result a live waiver accepts carries that waiver; the verdict stays.
 * Only failing results count as a waiver's use.
 */
export function applyRunWaivers(
  results: readonly SecurityResult[],
  backend: string,
  waivers: readonly Waiver[],
  today: string = utcDay(),
): { results: SecurityResult[]; uses: WaiverUse[] } {
  const subjectOf = (r: SecurityResult): WaiverSubject => ({ id: r.id, backend, fingerprint: evidenceFingerprint(r) });
  const failing = results.filter((r) => FAILING.has(r.verdict));
  const out = results.map((r) => {
    const w = FAILING.has(r.verdict) ? liveWaiverFor(waivers, subjectOf(r), today) : undefined;
    return w ? { ...r, waiver: { reason: w.reason, owner: w.owner, expires: w.expires } } : r;
  });
  return { results: out, uses: waiverUses(waivers, failing.map(subjectOf), today) };
}

/**
 * One line per waiver that needs attention: expired ones that matched fail; unused ones should be removed, unless their
 * probe still fails with evidence of another fingerprint (then the line says so and gives the fingerprint it has now).
 */
export function waiverNotices(uses: readonly WaiverUse[], today: string = utcDay()): string[] {
  const name = (w: Waiver) => `${visibleLine(w.probe)}${w.backend ? ` on ${visibleLine(w.backend)}` : ''}`;
  const owner = (u: WaiverUse) => `owner ${visibleLine(u.waiver.owner)}${isExpired(u.waiver, today) ? `, expired on ${u.waiver.expires}` : ''}`;
  return uses.flatMap((u) => {
    if (u.status === 'expired')
      return [
        `waiver for ${name(u.waiver)} expired on ${u.waiver.expires} (owner ${visibleLine(u.waiver.owner)}; matched ${u.matched.map(visibleLine).join(', ')}): renew it or fix the finding`,
      ];
    if (u.status !== 'unused') return [];
    const now = u.fingerprintNow ?? [];
    if (now.length > 0 && u.waiver.fingerprint !== undefined)
      return [
        `waiver for ${name(u.waiver)} (${owner(u)}) matched nothing: its fingerprint ${u.waiver.fingerprint} differs from the finding's, which is now ${now.join(' or ')} (the outside evidence changed): if it is still the finding you accepted, put the new fingerprint in the waiver; otherwise remove it`,
      ];
    return [`unused waiver for ${name(u.waiver)} (${owner(u)}): it matched nothing that still fails, remove it`];
  });
}
