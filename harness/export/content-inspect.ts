import { inspectArchive, type ContentReport, type InspectLimits } from './archive-inspect.js';
import { decodeText, detectDelimiter, sniffContentType } from './content-type.js';
import { columnLetters, findFormulaCells } from './csv-formula.js';
import { extensionOf } from './export-path.js';
import { findSvgHazards } from './svg-script.js';
import { admits, EXECUTABLE_TYPES, nameContentMismatch, OPAQUE_ARCHIVE_TYPES } from './type-rules.js';
import type { ContentType } from '../../model/export-types.js';

export interface ContentVerdict extends ContentReport {
  type: ContentType;
}

export interface ContentOptions extends InspectLimits {
  allowedTypes?: readonly string[];
}

function formulaFindings(text: string, ext: string, max: number): ContentReport['findings'] {
  const delimiter = ext === 'tsv' ? '\t' : (detectDelimiter(text) ?? ',');
  const { cells, total } = findFormulaCells(text.replace(/^\uFEFF/, ''), delimiter, max);
  const findings: ContentReport['findings'] = cells.map((c) => ({
    kind: 'formula-injection',
    detail: `cell would be evaluated as a formula: ${JSON.stringify(c.cell.slice(0, 80))}`,
    location: `row ${c.row}, column ${c.column} (${columnLetters(c.column)}${c.row})`,
  }));
  if (total > cells.length) findings.push({ kind: 'formula-injection', detail: `${total - cells.length} more formula cells not listed` });
  return findings;
}

/**
 * Judges one regular file by its bytes: what it is, whether its name lies about that, whether the
 * policy admits it, and what hazards it carries (archives are listed as data, never extracted).
 */
export function inspectContent(path: string, bytes: Uint8Array, opts: ContentOptions): ContentVerdict {
  const report: ContentReport = { refusals: [], findings: [] };
  let type = sniffContentType(bytes);
  if (type === 'zip' || type === 'tar' || type === 'gzip') {
    const archive = inspectArchive(bytes, type, opts, path);
    report.refusals.push(...archive.refusals);
    report.findings.push(...archive.findings);
    if (archive.refinedType !== undefined) type = archive.refinedType;
  }
  if (OPAQUE_ARCHIVE_TYPES.includes(type)) {
    report.refusals.push({ rule: 'archive-uninspectable', detail: `${type} content cannot be listed by the exporter, so it cannot be verified` });
  }
  if (EXECUTABLE_TYPES.includes(type)) report.findings.push({ kind: 'executable', detail: `${type} executable` });
  if (type === 'script') {
    const firstLine = (decodeText(bytes.subarray(0, 256)) ?? '').split('\n', 1)[0] ?? '';
    report.findings.push({ kind: 'script', detail: `shebang script ${JSON.stringify(firstLine.slice(0, 80))}`, location: 'line 1' });
  }
  const ext = extensionOf(path);
  if (type === 'csv' || ((ext === 'csv' || ext === 'tsv') && type === 'text')) {
    const text = decodeText(bytes);
    if (text !== undefined) report.findings.push(...formulaFindings(text, ext, opts.maxReports));
  }
  if (type === 'svg') {
    const text = decodeText(bytes) ?? '';
    const { hazards, total } = findSvgHazards(text, opts.maxReports);
    for (const h of hazards) report.findings.push({ kind: 'svg-script', detail: `${h.what}: ${JSON.stringify(h.excerpt)}`, location: `line ${h.line}` });
    if (total > hazards.length) report.findings.push({ kind: 'svg-script', detail: `${total - hazards.length} more active-content hits not listed` });
  }
  const mismatch = nameContentMismatch(path, type);
  if (mismatch !== undefined) report.refusals.push({ rule: 'type-mismatch', detail: `${mismatch} but the content is ${type}` });
  if (opts.allowedTypes !== undefined && !admits(opts.allowedTypes, type)) {
    report.refusals.push({ rule: 'type-not-allowed', detail: `content is ${type}; allowed: ${opts.allowedTypes.join(', ') || '(none)'}` });
  }
  return { type, ...report };
}
