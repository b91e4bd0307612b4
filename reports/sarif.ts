/**
 * SARIF 2.1.0 projection of the security scorecard, for code-scanning dashboards (GitHub code scanning among them).
 *
 * Which verdicts become results: `crossed` and `unenforced` (both failures of the card: the boundary
 * was crossed, or the policy requires an item the backend does not enforce) at the level of the
 * probe's severity (critical/high → error, medium → warning, low → note); `inconclusive` as a
 * warning (the boundary was not demonstrated either way). `held` and `not-applicable` are no
 * findings; the run's summary counts them.
 *
 * Where a result is: the sandbox is no source file, so each result points at the spec of the probe that
 * found it (`probes/<id>/probe.ts`, a path inside the sandcheck package, at the line that names its id) as
 * its physical location, which code scanning requires, and at backend / policy item as its logical one.
 * The run's `automationDetails.id` is `sandcheck/<backend>[/<label>]/`: code scanning takes it as the
 * analysis category, so uploads for other backends or labels do not replace each other's alerts.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname, join } from 'node:path';
import type { SecurityResult, SecurityScorecard } from '../model/scorecard.js';
import type { Severity } from '../model/verdict.js';
import { packageRoot, packageVersion } from '../core/paths.js';
import { capText, safeJsonStringify, visibleLine, visibleText } from '../core/clean-text.js';
import { evidenceFingerprint } from '../harness/waivers.js';
import { threatOf } from './threat-mapping.js';

export const SARIF_SCHEMA_URI = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json';
export const SANDCHECK_INFORMATION_URI = 'https://www.npmjs.com/package/sandcheck';

type Level = 'error' | 'warning' | 'note';
interface Text {
  text: string;
}
type PropertyBag = Record<string, unknown> & { tags?: string[] };

/** A text region, columns in UTF-16 code units (the run's `columnKind`), the end column exclusive. */
export interface SarifRegion {
  startLine: number;
  startColumn: number;
  endLine: number;
  endColumn: number;
}

export interface SarifLocation {
  physicalLocation: { artifactLocation: { uri: string }; region: SarifRegion };
  logicalLocations: { name: string; fullyQualifiedName: string; kind: string }[];
  message: Text;
}

export interface SarifRule {
  id: string;
  name: string;
  shortDescription: Text;
  fullDescription: Text;
  help: Text;
  defaultConfiguration: { level: Level };
  properties: PropertyBag;
}

export interface SarifResult {
  ruleId: string;
  ruleIndex: number;
  level: Level;
  message: Text;
  locations: SarifLocation[];
  partialFingerprints: Record<string, string>;
  /** A waived crossing (run --waivers) stays in the log, suppressed with the waiver's word. */
  suppressions?: { kind: 'external'; status: 'accepted'; justification: string }[];
  properties: PropertyBag;
}

export interface SarifLog {
  $schema: string;
  version: '2.1.0';
  runs: {
    tool: { driver: { name: string; version: string; semanticVersion: string; informationUri: string; rules: SarifRule[] } };
    automationDetails: { id: string };
    invocations: { executionSuccessful: boolean; startTimeUtc: string; endTimeUtc: string }[];
    columnKind: 'utf16CodeUnits';
    results: SarifResult[];
    properties: PropertyBag;
  }[];
}

/** Where a probe's result points: the region of its spec that names it. */
export type SpecRegionOf = (id: string) => SarifRegion;

const LEVEL: Record<Severity, Level> = { critical: 'error', high: 'error', medium: 'warning', low: 'note' };
// GitHub code scanning reads `security-severity` as a CVSS-like score: ≥ 9 critical, ≥ 7 high, ≥ 4 medium.
const SECURITY_SEVERITY: Record<Severity, string> = { critical: '9.5', high: '8.0', medium: '5.5', low: '3.0' };
const REPORTED = new Set<SecurityResult['verdict']>(['crossed', 'unenforced', 'inconclusive']);
const FAILING = new Set<SecurityResult['verdict']>(['crossed', 'unenforced']);
const MESSAGE_MAX = 16 * 1024;
// GitHub code scanning: a rule's name at most 255 characters, its short and full descriptions at most 1024,
// at most 20 tags per rule of which only 10 are shown (docs: "SARIF support for code scanning").
const NAME_MAX = 255;
const DESCRIPTION_MAX = 1024;
const TAGS_MAX = 10;
const SPEC_MAX_BYTES = 1024 * 1024;

/** A zero-width region at the start of a file: where a result points when its spec's id cannot be found. */
export const FIRST_LINE: SarifRegion = { startLine: 1, startColumn: 1, endLine: 1, endColumn: 1 };

const pascal = (text: string): string => text.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_, _sep: string, c: string) => c.toUpperCase());
// SARIF1001: a rule's name must differ from its id (case aside), so a one-word id gets its category in front.
const ruleName = (r: SecurityResult): string =>
  (pascal(r.id).toLowerCase() === r.id.toLowerCase() ? pascal(`${r.category}-${r.id}`) : pascal(r.id)).slice(0, NAME_MAX);
const githubCweTag = (cwe: string): string => `external/cwe/cwe-${cwe.slice('CWE-'.length).padStart(3, '0')}`;
const clean = (text: string, max = MESSAGE_MAX): string => capText(visibleText(text), max);

/** A probe id as a folder name: what `probes/<id>/` can hold (the suite's ids all are). */
const FOLDER_ID = /^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;

/** The spec of a security probe, relative to the package root (`probes/<id>/probe.ts`); any other id is made a safe segment. */
export function specUri(id: string): string {
  const segment = FOLDER_ID.test(id) ? id : id.replace(/[^A-Za-z0-9_-]/g, '_') || '_';
  return `probes/${segment}/probe.ts`;
}

/** The region of the first `'<id>'` (or "<id>") literal in a spec, preferring the one after `id:`; undefined when there is none. */
export function regionOfId(text: string, id: string): SarifRegion | undefined {
  const lines = text.split('\n');
  const literals = [`'${id}'`, `"${id}"`, `\`${id}\``];
  for (const afterIdKey of [true, false]) {
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? '';
      for (const literal of literals) {
        const at = line.indexOf(literal);
        if (at < 0 || (afterIdKey && !/\bid\s*:\s*$/.test(line.slice(0, at)))) continue;
        return { startLine: i + 1, startColumn: at + 1, endLine: i + 1, endColumn: at + 1 + literal.length };
      }
    }
  }
  return undefined;
}

const specRegions = new Map<string, SarifRegion>();

/** The region of a built-in probe's id in its spec as this package holds it (read once per id); the first line when the source is not here. */
export function specRegionInPackage(id: string): SarifRegion {
  const known = specRegions.get(id);
  if (known) return known;
  let region = FIRST_LINE;
  if (FOLDER_ID.test(id)) {
    const path = join(packageRoot(), 'probes', id, 'probe.ts');
    try {
      // The npm package ships payloads and compiled specs, not probe.ts: then the result points at line 1.
      if (statSync(path).size <= SPEC_MAX_BYTES) region = regionOfId(readFileSync(path, 'utf8'), id) ?? FIRST_LINE;
    } catch {
      region = FIRST_LINE;
    }
  }
  specRegions.set(id, region);
  return region;
}

/** `sandcheck/<backend>[/<label>]/`: the category of the analysis (everything before the last `/`), no run id after it. */
export function sarifCategory(card: SecurityScorecard): string {
  const label = card.environment?.label;
  return `sandcheck/${visibleLine(card.backend.name)}${label ? `/${visibleLine(label)}` : ''}/`;
}

/** Same probe, backend and label → the same value in every run; anything else differs. `<16 hex>:1`, as code scanning writes its own. */
export function findingFingerprint(card: SecurityScorecard, r: Pick<SecurityResult, 'id'>): string {
  const identity = JSON.stringify(['sandcheck/finding/v1', card.backend.name, card.environment?.label ?? '', r.id]);
  return `${createHash('sha256').update(identity).digest('hex').slice(0, 16)}:1`;
}

function ruleTags(category: string, attack: readonly string[], cwe: readonly string[]): string[] {
  // The first TAGS_MAX, most useful first: GitHub filters on `security` and reads `external/cwe/cwe-NNN`.
  return [...new Set(['security', category, ...cwe.map(githubCweTag), ...attack, ...cwe])].slice(0, TAGS_MAX);
}

function rule(r: SecurityResult): SarifRule {
  const { attack, cwe } = threatOf(r);
  return {
    id: r.id,
    name: ruleName(r),
    shortDescription: { text: clean(r.title || r.id, DESCRIPTION_MAX) },
    fullDescription: { text: clean(`${r.title || r.id} (policy item ${r.policyItem}, ${r.category} isolation)`, DESCRIPTION_MAX) },
    help: { text: clean(r.remediation || `See the probe ${r.id} in sandcheck's documentation.`) },
    defaultConfiguration: { level: LEVEL[r.severity] },
    properties: {
      tags: ruleTags(r.category, attack, cwe),
      'security-severity': SECURITY_SEVERITY[r.severity],
      precision: 'high',
      policyItem: r.policyItem,
      ...(attack.length > 0 ? { attack } : {}),
      ...(cwe.length > 0 ? { cwe } : {}),
    },
  };
}

function message(r: SecurityResult): string {
  const seen = r.evidence.filter((e) => e.source === 'outside').map((e) => `- ${e.witness}${e.where ? ` @ ${e.where}` : ''}: ${e.detail}`);
  const label = r.verdict === 'crossed' ? 'CROSSED' : r.verdict === 'unenforced' ? 'UNENFORCED' : 'INCONCLUSIVE';
  return clean(
    `${label}${r.claimed === false && r.verdict === 'crossed' ? ' — NOT CLAIMED' : ''}: ${r.reason || r.title || r.id}\n\noutside evidence:\n${seen.length > 0 ? seen.join('\n') : '(none)'}`,
  );
}

function result(card: SecurityScorecard, r: SecurityResult, ruleIndex: number, regionOf: SpecRegionOf): SarifResult {
  const label = card.environment?.label;
  return {
    ruleId: r.id,
    ruleIndex,
    level: r.verdict === 'inconclusive' ? 'warning' : LEVEL[r.severity],
    message: { text: message(r) },
    locations: [
      {
        physicalLocation: { artifactLocation: { uri: specUri(r.id) }, region: regionOf(r.id) },
        logicalLocations: [{ name: r.policyItem, fullyQualifiedName: `${card.backend.name}/${r.policyItem}`, kind: 'resource' }],
        message: { text: clean(`the spec of the probe ${r.id} in the sandcheck package`, DESCRIPTION_MAX) },
      },
    ],
    partialFingerprints: { primaryLocationLineHash: findingFingerprint(card, r) },
    ...(r.waiver
      ? {
          suppressions: [
            {
              kind: 'external' as const,
              status: 'accepted' as const,
              justification: clean(`waived: ${r.waiver.reason} (owner ${r.waiver.owner}, expires ${r.waiver.expires})`, 1024),
            },
          ],
        }
      : {}),
    properties: {
      verdict: r.verdict,
      severity: r.severity,
      backend: card.backend.name,
      ...(label ? { label } : {}),
      // What a waiver's `fingerprint` takes to accept only this evidence (harness/waivers.ts).
      ...(FAILING.has(r.verdict) ? { waiverFingerprint: evidenceFingerprint(r) } : {}),
      ...(r.harnessError ? { harnessError: r.harnessError.code } : {}),
    },
  };
}

/**
 * The SARIF log of a security scorecard: one rule per probe, one result per crossing, unenforced item or inconclusive probe.
 * `regionOf` says where in its spec each result points (by default read from this package's probe sources).
 */
export function securitySarif(card: SecurityScorecard, regionOf: SpecRegionOf = specRegionInPackage): SarifLog {
  const version = card.run.sandcheckVersion || packageVersion();
  const rules = card.results.map(rule);
  const results = card.results.flatMap((r, i) => (REPORTED.has(r.verdict) ? [result(card, r, i, regionOf)] : []));
  return {
    $schema: SARIF_SCHEMA_URI,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'sandcheck', version, semanticVersion: version, informationUri: SANDCHECK_INFORMATION_URI, rules } },
        automationDetails: { id: sarifCategory(card) },
        invocations: [{ executionSuccessful: !card.run.incomplete, startTimeUtc: card.run.startedAt, endTimeUtc: card.run.finishedAt }],
        columnKind: 'utf16CodeUnits',
        results,
        properties: {
          backend: card.backend.name,
          ...(card.environment?.label ? { label: card.environment.label } : {}),
          policy: card.policy.name,
          runId: card.run.id,
          summary: card.summary,
        },
      },
    ],
  };
}

/** The bytes `security.sarif` holds for a log. */
export const sarifText = (log: SarifLog): string => `${safeJsonStringify(log, 2)}\n`;

export async function writeSarif(path: string, card: SecurityScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, sarifText(securitySarif(card)));
}
