import { inspectContent } from './content-inspect.js';
import { ExportError } from './errors.js';
import { normaliseExportPath, showName } from './export-path.js';
import { writeAllOrNothing, type FileToWrite } from './safe-write.js';
import {
  type ExportCandidate,
  ExportCandidateSchema,
  type ExportDecision,
  type Exporter,
  type ExportLimits,
  ExportLimitsSchema,
  type Finding,
  type FindingKind,
  type Refusal,
  type RefusalRule,
  WHOLE_SET,
} from '../../model/export-types.js';

export interface ReferenceExporterOptions {
  /**
   * Which content findings refuse the export. Default: all of them. Macros and executables (ELF, PE,
   * Mach-O, wasm) are what a sandbox must never hand out as data; formula injection, SVG script and
   * shebang scripts refuse too by default, and a policy that wants them out (e.g. a code-generation
   * task) turns them off here. Findings are reported either way.
   */
  refuseFindings?: Partial<Record<FindingKind, boolean>>;
  /** Archive entry cap (default 10 000); more entries refuse the archive. */
  maxArchiveEntries?: number;
  /** Decompression budget per file (default 128 MiB); a gzip inflating past it is refused as unverifiable. */
  maxInflatedBytes?: number;
  /** Per-file cap on listed refusals/findings from archives, CSV cells, SVG hits (default 50). */
  maxReportsPerFile?: number;
  /** Declared artifacts that do not exist are refused by default; true skips them silently. */
  allowMissing?: boolean;
  /** Mode of written files before umask (default 0o644: never executable). */
  fileMode?: number;
}

const KIND_RULES: Partial<Record<ExportCandidate['kind'], RefusalRule>> = {
  directory: 'kind-directory',
  symlink: 'kind-symlink',
  hardlink: 'kind-hardlink',
  fifo: 'kind-fifo',
  socket: 'kind-socket',
  device: 'kind-device',
  other: 'kind-other',
  missing: 'kind-missing',
};

const FINDING_RULES: Record<FindingKind, RefusalRule> = {
  'formula-injection': 'finding-formula-injection',
  macro: 'finding-macro',
  'svg-script': 'finding-svg-script',
  executable: 'finding-executable',
  script: 'finding-script',
};

function validate(candidates: readonly ExportCandidate[], limits: ExportLimits): void {
  const l = ExportLimitsSchema.safeParse(limits);
  if (!l.success) throw new ExportError('EXPORT_INPUT_INVALID', `invalid export limits: ${l.error.message}`);
  candidates.forEach((c, i) => {
    const r = ExportCandidateSchema.safeParse(c);
    if (!r.success) throw new ExportError('EXPORT_INPUT_INVALID', `invalid export candidate #${i}: ${r.error.message}`);
  });
}

interface Judged {
  refusals: Refusal[];
  findings: Finding[];
  write?: FileToWrite;
}

function judgeCandidate(c: ExportCandidate, limits: ExportLimits, opts: Required<ReferenceExporterOptions>): Judged {
  const refusals: Refusal[] = [];
  const findings: Finding[] = [];
  const refuse = (rule: RefusalRule, detail: string): void => void refusals.push({ path: c.path, rule, detail });
  const where = normaliseExportPath(c.path);
  if (!where.ok) refuse(where.rule, where.detail);
  const kindRule = KIND_RULES[c.kind];
  if (kindRule !== undefined) {
    const target = c.kind === 'symlink' ? ` to ${showName(c.linkTarget ?? '(unknown)')}` : '';
    refuse(kindRule, `only regular files are exported; this is a ${c.kind}${target}`);
    return { refusals, findings };
  }
  if ((c.nlink ?? 1) > 1) refuse('kind-hardlink', `regular file with ${c.nlink} links: it is also reachable from elsewhere`);
  const bytes = Math.max(c.size, c.content?.length ?? 0);
  if (bytes > limits.maxFileBytes) refuse('file-too-large', `${bytes} bytes exceeds the per-file limit of ${limits.maxFileBytes}`);
  else if (c.content === undefined) refuse('content-missing', 'the backend delivered no content, so it cannot be verified');
  else if (c.content.length !== c.size) refuse('size-mismatch', `declared ${c.size} bytes but ${c.content.length} were delivered`);
  if (c.content === undefined || bytes > limits.maxFileBytes) return { refusals, findings };
  const verdict = inspectContent(c.path, c.content, {
    maxEntries: opts.maxArchiveEntries,
    maxInflatedBytes: opts.maxInflatedBytes,
    maxReports: opts.maxReportsPerFile,
    ...(limits.allowedTypes === undefined ? {} : { allowedTypes: limits.allowedTypes }),
  });
  for (const r of verdict.refusals) refuse(r.rule, r.detail);
  for (const f of verdict.findings) {
    findings.push({ path: c.path, ...f });
    if (opts.refuseFindings[f.kind] !== false) refuse(FINDING_RULES[f.kind], `${f.detail}${f.location === undefined ? '' : ` (${f.location})`}`);
  }
  if (refusals.length > 0 || !where.ok) return { refusals, findings };
  return { refusals, findings, write: { path: where.path, content: c.content } };
}

/** Two outputs may not land on the same name (also case-folded) or use a file as another's directory. */
function collisions(files: readonly { raw: string; path: string }[]): Refusal[] {
  const out: Refusal[] = [];
  const seen = new Map<string, string>();
  const asFile = new Set(files.map((f) => f.path.toLowerCase()));
  for (const f of files) {
    const key = f.path.toLowerCase();
    const prior = seen.get(key);
    if (prior !== undefined) out.push({ path: f.raw, rule: 'path-duplicate', detail: `lands on the same name as ${showName(prior)}` });
    else seen.set(key, f.raw);
    const segs = key.split('/');
    for (let i = 1; i < segs.length; i++) {
      const dir = segs.slice(0, i).join('/');
      if (asFile.has(dir)) out.push({ path: f.raw, rule: 'path-conflict', detail: `needs ${showName(dir)} as a directory, but it is exported as a file` });
    }
  }
  return out;
}

function defaults(o: ReferenceExporterOptions): Required<ReferenceExporterOptions> {
  return {
    refuseFindings: o.refuseFindings ?? {},
    maxArchiveEntries: o.maxArchiveEntries ?? 10_000,
    maxInflatedBytes: o.maxInflatedBytes ?? 128 * 1024 * 1024,
    maxReportsPerFile: o.maxReportsPerFile ?? 50,
    allowMissing: o.allowMissing ?? false,
    fileMode: o.fileMode ?? 0o644,
  };
}

/**
 * The exporter sandcheck holds backends to: regular files only, contained paths, limits, content-judged
 * types and hazards, archives listed as data; all or nothing per environment, every reason returned.
 */
export function createReferenceExporter(options: ReferenceExporterOptions = {}): Exporter {
  const opts = defaults(options);
  return {
    name: 'reference',
    async export(candidates, limits, destDir): Promise<ExportDecision> {
      validate(candidates, limits);
      const present = opts.allowMissing ? candidates.filter((c) => c.kind !== 'missing') : [...candidates];
      const refusals: Refusal[] = [];
      const findings: Finding[] = [];
      const writes: { raw: string; file: FileToWrite }[] = [];
      if (present.length > limits.maxFiles) {
        refusals.push({ path: WHOLE_SET, rule: 'too-many-files', detail: `${present.length} artifacts exceed the limit of ${limits.maxFiles}` });
      }
      const total = present.reduce((sum, c) => sum + (c.kind === 'file' ? Math.max(c.size, c.content?.length ?? 0) : 0), 0);
      if (total > limits.maxTotalBytes) {
        refusals.push({ path: WHOLE_SET, rule: 'total-too-large', detail: `${total} bytes in all exceed the aggregate limit of ${limits.maxTotalBytes}` });
      }
      for (const c of present) {
        const judged = judgeCandidate(c, limits, opts);
        refusals.push(...judged.refusals);
        findings.push(...judged.findings);
        if (judged.write) writes.push({ raw: c.path, file: judged.write });
      }
      refusals.push(...collisions(writes.map((w) => ({ raw: w.raw, path: w.file.path }))));
      if (refusals.length > 0) return { accepted: false, exported: [], refusals, findings };
      const exported = await writeAllOrNothing(
        destDir,
        writes.map((w) => w.file),
        opts.fileMode,
      );
      return { accepted: true, exported, refusals: [], findings };
    },
  };
}

export const referenceExporter: Exporter = createReferenceExporter();
