import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { writeReportFile } from '../core/atomic-write.js';
import { checkOutDir } from '../core/out-dir.js';
import { join } from 'node:path';
import { canonicalJson, policySha256 } from '../harness/environment-facts.js';
import { EnvironmentFingerprintSchema, type EnvironmentFingerprint } from '../harness/environment-fingerprint.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import { readBoundedFile } from '../core/bounded-file.js';
import { PolicySchema, type Policy } from '../model/policy.js';
import type { SecurityScorecard, TaskScorecard } from '../model/scorecard.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { securityJunit, taskJunit } from './junit-report.js';
import { FIRST_LINE, sarifText, securitySarif, type SarifRegion } from './sarif.js';
import { validateScorecard } from './validate.js';
import type { CardFiles } from './write-cards.js';

/**
 * The sign-off bundle (`run --certify DIR`): both scorecards, both JUnit files and the SARIF log as the run
 * wrote them, the policy as used, the environment fingerprint, and `manifest.sha256` in `sha256sum` format (so
 * `sha256sum -c manifest.sha256` checks it too). `sandcheck verify DIR` checks it the stricter way.
 */
export const MANIFEST = 'manifest.sha256';
export const BUNDLE_FILES = [
  'security.json',
  'task.json',
  'security.junit.xml',
  'task.junit.xml',
  'security.sarif',
  'policy.json',
  'environment.json',
] as const;
const FILE_MAX = 256 * 1024 * 1024;
const MANIFEST_LINE = /^([0-9a-f]{64}) {2}([A-Za-z0-9._-]{1,128})$/;

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

export function manifestText(entries: readonly { file: string; sha256: string }[]): string {
  return [...entries]
    .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
    .map((e) => `${e.sha256}  ${e.file}\n`)
    .join('');
}

/** A directory that does not exist or is empty: a bundle never mixes with other files. */
export async function requireEmptyBundleDir(dir: string): Promise<void> {
  // Never through a symlink, at any level.
  await checkOutDir(dir).catch((err: unknown) => {
    throw err instanceof SandcheckError ? new SandcheckError(err.code, err.message.replace(/^--out /, '--certify '), err.hint ? { hint: err.hint } : {}) : err;
  });
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new SandcheckError('OUT_DIR_UNUSABLE', `--certify ${dir}: ${errorMessage(err)}`);
  }
  if (names.length > 0)
    throw new SandcheckError('USAGE', `--certify ${dir} is not empty (${names.length} entr${names.length === 1 ? 'y' : 'ies'})`, {
      hint: 'name a new directory for the sign-off bundle',
    });
}

export async function writeBundle(dir: string, run: { files: CardFiles; policy: Policy; fingerprint: EnvironmentFingerprint }): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [from, name] of [
    [run.files.securityJson, 'security.json'],
    [run.files.taskJson, 'task.json'],
    [run.files.securityJunit, 'security.junit.xml'],
    [run.files.taskJunit, 'task.junit.xml'],
    [run.files.securitySarif, 'security.sarif'],
  ] as const) {
    await writeReportFile(join(dir, name), await readFile(from));
  }
  await writeReportFile(join(dir, 'policy.json'), `${safeJsonStringify(run.policy, 2)}\n`);
  await writeReportFile(join(dir, 'environment.json'), `${safeJsonStringify(EnvironmentFingerprintSchema.parse(run.fingerprint), 2)}\n`);
  const entries = [];
  for (const file of BUNDLE_FILES) {
    const read = await readBoundedFile(join(dir, file), FILE_MAX);
    if (!read.ok) throw new SandcheckError('INTERNAL', `the bundle file ${join(dir, file)} cannot be read back: ${read.message}`);
    entries.push({ file, sha256: sha256(read.bytes) });
  }
  const manifest = join(dir, MANIFEST);
  await writeReportFile(manifest, manifestText(entries));
  return manifest;
}

export interface BundleProblem {
  file: string;
  problem: string;
}

function parseJson(bytes: Buffer): { ok: true; value: unknown } | { ok: false; why: string } {
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch (err) {
    return { ok: false, why: `not JSON: ${errorMessage(err)}` };
  }
}

/** Every manifest entry re-hashed, every file not in it named, every report re-validated. Empty: the bundle is as written. */
export async function verifyBundle(dir: string): Promise<BundleProblem[]> {
  const problems: BundleProblem[] = [];
  const problem = (file: string, what: string): void => void problems.push({ file: visibleLine(file), problem: visibleLine(what) });
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new SandcheckError('USAGE', `cannot read the bundle ${dir}: ${errorMessage(err)}`, {
      hint: 'pass the directory `sandcheck run --certify DIR` wrote',
    });
  }
  const manifestRead = await readBoundedFile(join(dir, MANIFEST), 1024 * 1024);
  if (!manifestRead.ok)
    throw new SandcheckError('USAGE', `${join(dir, MANIFEST)}: ${manifestRead.message}`, { hint: 'pass the directory `sandcheck run --certify DIR` wrote' });
  const listed = new Map<string, string>();
  const text = manifestRead.bytes.toString('utf8');
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : [text];
  lines.forEach((line, i) => {
    const m = MANIFEST_LINE.exec(line);
    if (!m?.[1] || !m[2]) return problem(MANIFEST, `line ${i + 1} is not "<sha256>  <file>": ${line.slice(0, 120)}`);
    if (listed.has(m[2]) || m[2] === MANIFEST) return problem(MANIFEST, `line ${i + 1} lists ${m[2]} again`);
    listed.set(m[2], m[1]);
  });
  // Bytes that parse to the same entries but differ (spacing, order, line ends) are a change too.
  if (manifestText([...listed].map(([file, h]) => ({ file, sha256: h }))) !== text)
    problem(MANIFEST, 'the manifest is not byte for byte as sandcheck writes it (order, spacing or line ends changed)');
  for (const e of entries) {
    if (e.name === MANIFEST) continue;
    if (!listed.has(e.name)) problem(e.name, 'is not in the manifest (added after the bundle was written)');
    else if (!e.isFile()) problem(e.name, 'is not a regular file');
  }
  for (const f of BUNDLE_FILES) if (!listed.has(f)) problem(f, 'a bundle file the manifest does not list');
  const bytes = new Map<string, Buffer>();
  for (const [file, want] of listed) {
    const read = await readBoundedFile(join(dir, file), FILE_MAX);
    if (!read.ok) {
      problem(file, read.reason === 'missing' ? 'is in the manifest but missing' : read.message);
      continue;
    }
    const got = sha256(read.bytes);
    if (got !== want) problem(file, `SHA-256 ${got} differs from the manifest's ${want}`);
    bytes.set(file, read.bytes);
  }
  validateReports(bytes, problem);
  return problems;
}

const isLine = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1_000_000;

/** Each result's region in its spec, by rule id, from a SARIF log; a string says what is wrong with them. */
function sarifRegions(doc: unknown): Map<string, SarifRegion> | string {
  const results = (doc as { runs?: { results?: unknown }[] } | null)?.runs?.[0]?.results;
  if (!Array.isArray(results)) return 'has no runs[0].results';
  const regions = new Map<string, SarifRegion>();
  for (const r of results as { ruleId?: unknown; locations?: { physicalLocation?: { region?: Partial<Record<keyof SarifRegion, unknown>> } }[] }[]) {
    const region = r?.locations?.[0]?.physicalLocation?.region;
    if (typeof r?.ruleId !== 'string' || !region) return 'a result has no ruleId or no physicalLocation.region';
    const { startLine, startColumn, endLine, endColumn } = region;
    if (
      !isLine(startLine) ||
      !isLine(startColumn) ||
      !isLine(endLine) ||
      !isLine(endColumn) ||
      endLine < startLine ||
      (endLine === startLine && endColumn < startColumn)
    )
      return `the region of ${r.ruleId.slice(0, 128)} is not a line and column range`;
    regions.set(r.ruleId, { startLine, startColumn, endLine, endColumn });
  }
  return regions;
}

/** The reports against their schemas, and against each other: JUnit and SARIF are projections of their cards; one policy throughout. */
function validateReports(bytes: ReadonlyMap<string, Buffer>, problem: (file: string, what: string) => void): void {
  const json = (file: string): unknown => {
    const b = bytes.get(file);
    if (!b) return undefined;
    const parsed = parseJson(b);
    if (!parsed.ok) problem(file, parsed.why);
    return parsed.ok ? parsed.value : undefined;
  };
  const cards: { security?: SecurityScorecard; task?: TaskScorecard } = {};
  for (const kind of ['security', 'task'] as const) {
    const doc = json(`${kind}.json`);
    if (doc === undefined) continue;
    const check = validateScorecard(kind, doc);
    if (!check.valid) problem(`${kind}.json`, `does not match reports/schema/${kind}-scorecard.schema.json: ${check.errors.slice(0, 300)}`);
    else if (kind === 'security') cards.security = doc as SecurityScorecard;
    else cards.task = doc as TaskScorecard;
  }
  const junit = [
    ['security.junit.xml', cards.security && securityJunit(cards.security)],
    ['task.junit.xml', cards.task && taskJunit(cards.task)],
  ] as const;
  for (const [file, expected] of junit) {
    const got = bytes.get(file);
    if (got && expected !== undefined && got.toString('utf8') !== expected) problem(file, 'is not the JUnit projection of its scorecard');
  }
  const sarif = json('security.sarif');
  if (sarif !== undefined && cards.security) {
    // Byte for byte the projection of security.json, but for where each result points in its probe's spec: that line
    // comes from the probe sources of the sandcheck that wrote it, so it is taken from the log itself (and checked sane).
    const regions = sarifRegions(sarif);
    if (typeof regions === 'string') problem('security.sarif', regions);
    else if (bytes.get('security.sarif')?.toString('utf8') !== sarifText(securitySarif(cards.security, (id) => regions.get(id) ?? FIRST_LINE)))
      problem('security.sarif', 'is not the SARIF projection of its scorecard');
  }
  const policyDoc = json('policy.json');
  const policy = policyDoc === undefined ? undefined : PolicySchema.safeParse(policyDoc);
  if (policy && !policy.success) problem('policy.json', `does not match reports/schema/policy.schema.json: ${policy.error.message.slice(0, 300)}`);
  const fpDoc = json('environment.json');
  const fp = fpDoc === undefined ? undefined : EnvironmentFingerprintSchema.safeParse(fpDoc);
  if (fp && !fp.success) problem('environment.json', `does not match reports/schema/environment-fingerprint.schema.json: ${fp.error.message.slice(0, 300)}`);
  if (policy?.success) {
    const want = canonicalJson(policyDoc);
    for (const [kind, card] of Object.entries(cards))
      if (canonicalJson(card.policy) !== want) problem(`${kind}.json`, "its policy is not the bundle's policy.json");
    if (fp?.success && fp.data.environment.policySha256 !== policySha256(policy.data))
      problem('environment.json', "its policySha256 is not the hash of the bundle's policy.json");
  }
  if (cards.security) {
    const r = cards.security.results;
    const n = (v: string) => r.filter((x) => x.verdict === v).length;
    const s = cards.security.summary;
    if (
      s.total !== r.length ||
      s.held !== n('held') ||
      s.crossed !== n('crossed') ||
      s.unenforced !== n('unenforced') ||
      s.inconclusive !== n('inconclusive') ||
      s.notApplicable !== n('not-applicable')
    ) {
      problem('security.json', 'its summary does not count its results');
    }
  }
  if (cards.task) {
    const r = cards.task.results;
    const s = cards.task.summary;
    if (
      s.total !== r.length ||
      s.asExpected !== r.filter((x) => x.outcome === 'as-expected').length ||
      s.unexpected !== r.filter((x) => x.outcome === 'unexpected').length ||
      (s.notApplicable ?? 0) !== r.filter((x) => x.outcome === 'not-applicable').length
    )
      problem('task.json', 'its summary does not count its results');
  }
  if (cards.security && cards.task && cards.security.run.id !== cards.task.run.id)
    problem('task.json', `is of run ${cards.task.run.id}, security.json of run ${cards.security.run.id}`);
}
