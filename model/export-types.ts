import { z } from 'zod';

/** What the backend says a declared artifact is. Every field may have been shaped by the box. */
export const CANDIDATE_KINDS = ['file', 'directory', 'symlink', 'hardlink', 'fifo', 'socket', 'device', 'other', 'missing'] as const;
export type CandidateKind = (typeof CANDIDATE_KINDS)[number];

export interface ExportCandidate {
  /** As the box named it, workspace-relative; may be hostile ('../x', '/etc/x', 'a/../../b'). */
  path: string;
  kind: CandidateKind;
  size: number;
  /** Regular files within the per-file cap only. */
  content?: Uint8Array;
  /** For symlinks: the target as stored, never followed by the harness. */
  linkTarget?: string;
  /** >1 on a regular file = hardlinked to something else. */
  nlink?: number;
}

export const ExportCandidateSchema = z.strictObject({
  path: z.string(),
  kind: z.enum(CANDIDATE_KINDS),
  size: z.number().int().nonnegative(),
  content: z.instanceof(Uint8Array).optional(),
  linkTarget: z.string().optional(),
  nlink: z.number().int().nonnegative().optional(),
});

/** Content types the sniffer can name (judged by magic bytes, never by file name). */
export const CONTENT_TYPES = [
  'empty',
  'png',
  'jpeg',
  'gif',
  'pdf',
  'zip',
  'xlsx',
  'docx',
  'pptx',
  'gzip',
  'bzip2',
  'xz',
  'zstd',
  '7z',
  'rar',
  'tar',
  'elf',
  'pe',
  'macho',
  'wasm',
  'script',
  'svg',
  'xml',
  'html',
  'json',
  'csv',
  'text',
  'binary',
] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

export interface ExportLimits {
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  /** Content types (see CONTENT_TYPES) allowed out; a parent type admits its children ('text' admits 'csv'). */
  allowedTypes?: string[];
}

export const ExportLimitsSchema = z.strictObject({
  maxFiles: z.number().int().nonnegative(),
  maxFileBytes: z.number().int().nonnegative(),
  maxTotalBytes: z.number().int().nonnegative(),
  allowedTypes: z.array(z.enum(CONTENT_TYPES)).optional(),
});

/** Stable refusal codes: reports and tests match on these, never on detail text. */
export const REFUSAL_RULES = [
  // what the candidate is
  'kind-directory',
  'kind-symlink',
  'kind-hardlink',
  'kind-fifo',
  'kind-socket',
  'kind-device',
  'kind-other',
  'kind-missing',
  'content-missing',
  'size-mismatch',
  // where it would go
  'path-empty',
  'path-nul',
  'path-control-char',
  'path-backslash',
  'path-absolute',
  'path-escape',
  'path-too-long',
  'path-duplicate',
  'path-conflict',
  // how much
  'too-many-files',
  'file-too-large',
  'total-too-large',
  // what it contains
  'type-mismatch',
  'type-not-allowed',
  // content findings configured to refuse (see ReferenceExporterOptions.refuseFindings)
  'finding-formula-injection',
  'finding-macro',
  'finding-svg-script',
  'finding-executable',
  'finding-script',
  // archives, inspected as data
  'archive-absolute',
  'archive-escape',
  'archive-symlink',
  'archive-hardlink',
  'archive-special',
  'archive-bad-name',
  'archive-name-mismatch',
  'archive-too-many-entries',
  'archive-too-large',
  'archive-malformed',
  'archive-uninspectable',
  // a user's own exporter (--exporter command:<file>): its exit status refused, or it failed / timed out
  'exporter-refused',
  'exporter-failed',
] as const;
export type RefusalRule = (typeof REFUSAL_RULES)[number];

export const FINDING_KINDS = ['formula-injection', 'macro', 'svg-script', 'executable', 'script'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];

/** Path used for refusals about the whole set rather than one candidate. */
export const WHOLE_SET = '*';

export const ExportedFileSchema = z.strictObject({
  path: z.string(),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ExportedFile = z.infer<typeof ExportedFileSchema>;

export const RefusalSchema = z.strictObject({
  path: z.string(),
  rule: z.enum(REFUSAL_RULES),
  detail: z.string(),
});
export type Refusal = z.infer<typeof RefusalSchema>;

export const FindingSchema = z.strictObject({
  path: z.string(),
  kind: z.enum(FINDING_KINDS),
  detail: z.string(),
  /** Cell ('row 2, column 3 (C2)'), archive entry ('entry xl/vbaProject.bin') or line. */
  location: z.string().optional(),
});
export type Finding = z.infer<typeof FindingSchema>;

export const ExportDecisionSchema = z
  .strictObject({
    /** True only when every candidate passed and every one was written. */
    accepted: z.boolean(),
    exported: z.array(ExportedFileSchema),
    refusals: z.array(RefusalSchema),
    /** Reported whether or not export was allowed, so the cards can show them. */
    findings: z.array(FindingSchema),
  })
  .meta({ id: 'sandcheck-export-decision', title: 'sandcheck export decision' });
export type ExportDecision = z.infer<typeof ExportDecisionSchema>;

export interface Exporter {
  readonly name: string;
  /**
   * Copies the candidates of one environment into destDir, or nothing at all.
   * Resolves with the decision for anything the box controls; rejects with ExportError only
   * for harness-side failures (bad limits, unusable destDir).
   */
  export(candidates: readonly ExportCandidate[], limits: ExportLimits, destDir: string): Promise<ExportDecision>;
}

/** What the export stage saw of one execution's export: the exporter's decision and its effects on the host. */
export interface ExportOutcome {
  exporter: string;
  decision: ExportDecision;
  /** Host files next to and above the export directory that changed, appeared or vanished. */
  hostChanges: string[];
  /** Run canaries found in what the exporter wrote. */
  exportedCanaries: string[];
  /** Where the exported files are (a scratch directory of this execution). */
  destDir: string;
}
