import { gunzipSync } from 'node:zlib';
import { entryPrefix } from './archive-data.js';
import type { ArchiveEntry, ArchiveListing } from './archive-entry.js';
import { sniffExecutable, looksLikeTar } from './content-type.js';
import { checkArchiveEntryName, showName } from './export-path.js';
import { listTarEntries } from './tar-reader.js';
import type { ContentType, FindingKind, RefusalRule } from '../../model/export-types.js';
import { listZipEntries } from './zip-reader.js';

export interface InspectLimits {
  maxEntries: number;
  /** Budget for decompression (gzip body, entry sniffing); past it the archive cannot be verified. */
  maxInflatedBytes: number;
  /** Cap on refusals/findings reported per archive; the rest is summarised in one line. */
  maxReports: number;
}

export interface ContentReport {
  refusals: { rule: RefusalRule; detail: string }[];
  findings: { kind: FindingKind; detail: string; location?: string }[];
}

export interface ArchiveReport extends ContentReport {
  /** 'xlsx' / 'docx' / 'pptx' when the zip is OOXML. */
  refinedType?: ContentType;
  entries: number;
}

const SNIFF_BYTES = 4096;

function ooxmlType(entries: readonly ArchiveEntry[]): ContentType | undefined {
  const names = new Set(entries.map((e) => e.name));
  if (!names.has('[Content_Types].xml')) return undefined;
  const has = (prefix: string): boolean => entries.some((e) => e.name.startsWith(prefix));
  if (has('xl/')) return 'xlsx';
  if (has('word/')) return 'docx';
  if (has('ppt/')) return 'pptx';
  return undefined;
}

function judgeEntries(archive: Uint8Array, listing: ArchiveListing, limits: InspectLimits, where: string): ContentReport {
  const report: ContentReport = { refusals: [], findings: [] };
  const refuse = (rule: RefusalRule, detail: string): void => void report.refusals.push({ rule, detail: `${where}${detail}` });
  if (listing.malformed !== undefined) refuse('archive-malformed', `${listing.format} archive is damaged: ${listing.malformed}`);
  if (listing.truncated) refuse('archive-too-many-entries', `${listing.format} archive has more than ${limits.maxEntries} entries`);
  let sniffBudget = limits.maxInflatedBytes;
  let budgetSpent = false;
  for (const entry of listing.entries) {
    const shown = showName(entry.name);
    for (const name of [entry.name, ...entry.altNames]) {
      const check = checkArchiveEntryName(name);
      if (!check.ok) refuse(check.rule, check.detail);
    }
    if (entry.conflictingName !== undefined) {
      refuse('archive-name-mismatch', `entry ${shown} has local header name ${showName(entry.conflictingName)}; extractors disagree on where it goes`);
    }
    switch (entry.type) {
      case 'symlink':
        refuse('archive-symlink', `entry ${shown} is a symbolic link to ${showName(entry.linkTarget ?? '')}`);
        break;
      case 'hardlink':
        refuse('archive-hardlink', `entry ${shown} is a hard link to ${showName(entry.linkTarget ?? '')}`);
        break;
      case 'char-device':
      case 'block-device':
      case 'fifo':
      case 'socket':
      case 'other':
        refuse('archive-special', `entry ${shown} is a ${entry.type} (${entry.note ?? ''})`);
        break;
      case 'file':
      case 'directory':
        break;
    }
    if (/(^|[/\\])vbaproject\.bin$/i.test(entry.name)) {
      report.findings.push({ kind: 'macro', detail: `${where}VBA macro project ${shown}`, location: `entry ${entry.name}` });
    }
    if (entry.type === 'file' && entry.data !== undefined) {
      if (entry.encrypted === true || entry.data.method === 'other') {
        refuse(
          'archive-uninspectable',
          `entry ${shown} is ${entry.encrypted === true ? 'encrypted' : `compressed with an unsupported method (${entry.note ?? ''})`}; its content cannot be checked`,
        );
        continue;
      }
      if (sniffBudget <= 0) {
        budgetSpent = true;
        continue;
      }
      const head = entryPrefix(archive, entry.data, SNIFF_BYTES);
      if (head === undefined) {
        refuse('archive-malformed', `entry ${shown} has corrupt compressed data`);
        continue;
      }
      sniffBudget -= head.inflated;
      const exe = sniffExecutable(head.bytes);
      if (exe !== undefined) {
        report.findings.push({
          kind: exe === 'script' ? 'script' : 'executable',
          detail: `${where}entry ${shown} is ${exe === 'script' ? 'a shebang script' : `an ${exe} executable`}`,
          location: `entry ${entry.name}`,
        });
      }
    }
  }
  // Entries left unsniffed could hide an executable, so running out of budget is itself a refusal.
  if (budgetSpent) refuse('archive-too-large', `entries inflate beyond ${limits.maxInflatedBytes} bytes; not all could be checked`);
  return report;
}

/** Keeps the first maxReports of each list and says how many more there were. */
function capReports(report: ContentReport, max: number, path: string): ContentReport {
  const refusals = report.refusals.slice(0, max);
  if (report.refusals.length > max) {
    refusals.push({
      rule: report.refusals[max]?.rule ?? 'archive-malformed',
      detail: `${path}: ${report.refusals.length - max} more archive refusals not listed`,
    });
  }
  return { refusals, findings: report.findings.slice(0, max) };
}

function inflateGzip(b: Uint8Array, limit: number): Uint8Array | 'too-large' | 'corrupt' {
  try {
    const out = gunzipSync(b, { maxOutputLength: Math.max(1, limit) });
    return new Uint8Array(out.buffer, out.byteOffset, out.length);
  } catch (err) {
    const code = err instanceof Error && 'code' in err ? String(err.code) : '';
    return code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError ? 'too-large' : 'corrupt';
  }
}

/**
 * Lists a tar, zip or gzip(tar) archive as data and judges every entry; nothing is extracted.
 * Never throws: a damaged archive is a refusal, since what cannot be read cannot be verified.
 */
export function inspectArchive(bytes: Uint8Array, type: 'tar' | 'zip' | 'gzip', limits: InspectLimits, path: string): ArchiveReport {
  try {
    if (type === 'gzip') {
      const inner = inflateGzip(bytes, limits.maxInflatedBytes);
      if (inner === 'too-large') {
        return {
          entries: 0,
          findings: [],
          refusals: [{ rule: 'archive-too-large', detail: `gzip inflates beyond ${limits.maxInflatedBytes} bytes; contents cannot be verified` }],
        };
      }
      if (inner === 'corrupt') return { entries: 0, findings: [], refusals: [{ rule: 'archive-malformed', detail: 'gzip stream is corrupt' }] };
      if (looksLikeTar(inner)) {
        const listing = listTarEntries(inner, { maxEntries: limits.maxEntries });
        return { entries: listing.entries.length, ...capReports(judgeEntries(inner, listing, limits, 'gzip: '), limits.maxReports, path) };
      }
      const exe = sniffExecutable(inner.subarray(0, SNIFF_BYTES));
      const findings: ContentReport['findings'] =
        exe === undefined
          ? []
          : [
              {
                kind: exe === 'script' ? 'script' : 'executable',
                detail: `gzip holds ${exe === 'script' ? 'a shebang script' : `an ${exe} executable`}`,
                location: 'gzip body',
              },
            ];
      return { entries: 1, refusals: [], findings };
    }
    const listing = type === 'tar' ? listTarEntries(bytes, { maxEntries: limits.maxEntries }) : listZipEntries(bytes, { maxEntries: limits.maxEntries });
    const report: ArchiveReport = { entries: listing.entries.length, ...capReports(judgeEntries(bytes, listing, limits, ''), limits.maxReports, path) };
    const refined = type === 'zip' ? ooxmlType(listing.entries) : undefined;
    if (refined !== undefined) report.refinedType = refined;
    return report;
  } catch (err) {
    // The readers are written not to throw; this keeps a missed case from taking the harness down with it.
    return {
      entries: 0,
      findings: [],
      refusals: [{ rule: 'archive-malformed', detail: `archive could not be parsed: ${err instanceof Error ? err.message : String(err)}` }],
    };
  }
}
