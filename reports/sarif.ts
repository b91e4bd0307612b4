/**
 * SARIF 2.1.0 projection of the security scorecard, for code-scanning dashboards.
 *
 * Which verdicts become results: `crossed` and `unenforced` (both failures of the card: the boundary
 * was crossed, or the policy requires an item the backend does not enforce) at the level of the
 * probe's severity (critical/high → error, medium → warning, low → note); `inconclusive` as a
 * warning (the boundary was not demonstrated either way). `held` and `not-applicable` are no
 * findings; the run's summary counts them. There are no source files: a result's location is a
 * logical one, the backend and the policy item.
 */
import { mkdir } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { dirname } from 'node:path';
import type { SecurityResult, SecurityScorecard } from '../model/scorecard.js';
import type { Severity } from '../model/verdict.js';
import { packageVersion } from '../core/paths.js';
import { capText, safeJsonStringify, visibleText } from '../core/clean-text.js';
import { threatOf } from './threat-mapping.js';

export const SARIF_SCHEMA_URI = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json';
export const SANDCHECK_INFORMATION_URI = 'https://www.npmjs.com/package/sandcheck';

type Level = 'error' | 'warning' | 'note';
interface Text {
  text: string;
}
type PropertyBag = Record<string, unknown> & { tags?: string[] };

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
  locations: { logicalLocations: { name: string; fullyQualifiedName: string; kind: string }[] }[];
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
    results: SarifResult[];
    properties: PropertyBag;
  }[];
}

const LEVEL: Record<Severity, Level> = { critical: 'error', high: 'error', medium: 'warning', low: 'note' };
// GitHub code scanning reads `security-severity` as a CVSS-like score: ≥ 9 critical, ≥ 7 high, ≥ 4 medium.
const SECURITY_SEVERITY: Record<Severity, string> = { critical: '9.5', high: '8.0', medium: '5.5', low: '3.0' };
const REPORTED = new Set<SecurityResult['verdict']>(['crossed', 'unenforced', 'inconclusive']);
const MESSAGE_MAX = 16 * 1024;

const pascal = (text: string): string => text.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_, _sep: string, c: string) => c.toUpperCase());
// SARIF1001: a rule's name must differ from its id (case aside), so a one-word id gets its category in front.
const ruleName = (r: SecurityResult): string => (pascal(r.id).toLowerCase() === r.id.toLowerCase() ? pascal(`${r.category}-${r.id}`) : pascal(r.id));
const githubCweTag = (cwe: string): string => `external/cwe/cwe-${cwe.slice('CWE-'.length).padStart(3, '0')}`;
const clean = (text: string, max = MESSAGE_MAX): string => capText(visibleText(text), max);

function rule(r: SecurityResult): SarifRule {
  const { attack, cwe } = threatOf(r);
  return {
    id: r.id,
    name: ruleName(r),
    shortDescription: { text: clean(r.title, 1024) },
    fullDescription: { text: clean(`${r.title} (policy item ${r.policyItem}, ${r.category} isolation)`, 1024) },
    help: { text: clean(r.remediation) },
    defaultConfiguration: { level: LEVEL[r.severity] },
    properties: {
      tags: ['security', r.category, ...attack, ...cwe, ...cwe.map(githubCweTag)],
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
  return clean(`${label}: ${r.reason}\n\noutside evidence:\n${seen.length > 0 ? seen.join('\n') : '(none)'}`);
}

function result(card: SecurityScorecard, r: SecurityResult, ruleIndex: number): SarifResult {
  return {
    ruleId: r.id,
    ruleIndex,
    level: r.verdict === 'inconclusive' ? 'warning' : LEVEL[r.severity],
    message: { text: message(r) },
    locations: [{ logicalLocations: [{ name: r.policyItem, fullyQualifiedName: `${card.backend.name}/${r.policyItem}`, kind: 'resource' }] }],
    partialFingerprints: { 'sandcheck/v1': `${card.backend.name}/${r.id}` },
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
    properties: { verdict: r.verdict, severity: r.severity, backend: card.backend.name, ...(r.harnessError ? { harnessError: r.harnessError.code } : {}) },
  };
}

/** The SARIF log of a security scorecard: one rule per probe, one result per crossing, unenforced item or inconclusive probe. */
export function securitySarif(card: SecurityScorecard): SarifLog {
  const version = card.run.sandcheckVersion || packageVersion();
  const rules = card.results.map(rule);
  const results = card.results.flatMap((r, i) => (REPORTED.has(r.verdict) ? [result(card, r, i)] : []));
  return {
    $schema: SARIF_SCHEMA_URI,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'sandcheck', version, semanticVersion: version, informationUri: SANDCHECK_INFORMATION_URI, rules } },
        automationDetails: { id: `sandcheck/${card.backend.name}/${card.run.id}` },
        invocations: [{ executionSuccessful: !card.run.incomplete, startTimeUtc: card.run.startedAt, endTimeUtc: card.run.finishedAt }],
        results,
        properties: { backend: card.backend.name, policy: card.policy.name, runId: card.run.id, summary: card.summary },
      },
    ],
  };
}

export async function writeSarif(path: string, card: SecurityScorecard): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeReportFile(path, `${safeJsonStringify(securitySarif(card), 2)}\n`);
}
