import { z } from 'zod';
import type { Evidence } from './evidence.js';
import { ExecObservationSchema } from './observation.js';
import { PolicySchema } from './policy.js';
import { AttackTechniqueId, CweId } from './probe.js';
import { Category, ExpectedTaskVerdict, SecurityVerdict, Severity, TaskVerdict } from './verdict.js';
import { WaiverNoteSchema } from './waiver.js';
import { EnvironmentSchema } from './environment.js';
import { ShardSchema } from './shard.js';

export const SCORECARD_VERSION = '1.0.0';

export const EvidenceSchema = z.strictObject({
  /** outside: observed by the harness; inside: what the payload said about itself (never decides a pass). */
  source: z.enum(['outside', 'inside']),
  witness: z.string().min(1).describe('who observed it: canary-scan, harness-clock, output-capture, exit-status, payload-report, …'),
  where: z.string().optional().describe('channel or location: stdout, stderr, artifact:<path>, cgroup:<file>, decoy:<service>'),
  detail: z.string(),
}) satisfies z.ZodType<Evidence, Evidence>;

/** Bounds of the names a scorecard carries: ids, titles and names are short by construction (inputs are bounded tighter). */
export const ID_MAX = 128;
export const NAME_MAX = 256;
export const TITLE_MAX = 512;
const Id = () => z.string().max(ID_MAX);
const Name = () => z.string().max(NAME_MAX);
const Title = () => z.string().max(TITLE_MAX);

/** --watch-daemon sockets a run may watch (and a card record). */
export const WATCH_DAEMON_MAX = 16;

export const WatchedDaemonSchema = z.strictObject({
  socket: z.string().max(1024).describe('the --watch-daemon socket path, resolved'),
  apiVersion: z.string().max(128).describe('the Api-Version header of its /_ping answer when the run started'),
  server: z.string().max(128).optional().describe('its Server header (e.g. Docker/27.5.1 (linux), Libpod/5.4.0 (linux))'),
});
export type WatchedDaemon = z.infer<typeof WatchedDaemonSchema>;

const RunInfo = z.strictObject({
  id: Id(),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  interrupted: z.boolean(),
  incomplete: z.boolean().describe('the run did not finish (killed, interrupted or an internal error): results are missing'),
  sandcheckVersion: z.string(),
  shard: ShardSchema.optional().describe('this run is one slice of a selection (--shard i/n); `sandcheck merge` joins the slices'),
  merged: z
    .strictObject({ shards: z.number().int().positive(), runIds: z.array(Id()).max(1000) })
    .optional()
    .describe('these cards were joined by `sandcheck merge` from the shards of these runs'),
  exporter: Name().describe('the exporter the export probes judged (reference, naive, command:<file> or a module)'),
  trustClaims: z
    .literal(true)
    .optional()
    .describe("--trust-claims: a required item the backend does not claim was not run but recorded unenforced on the claim's word"),
  network: z
    .string()
    .max(1024)
    .optional()
    .describe("who judged the network probes: the run's own lab, a remote witness (sandcheck witness serve), the live network, or why none did"),
  watchedDaemons: z
    .array(WatchedDaemonSchema)
    .max(WATCH_DAEMON_MAX)
    .optional()
    .describe(
      "real container daemons (--watch-daemon) whose own event logs were read after each execution: a box's nonce-named call to one is an outside witness (host-search)",
    ),
  harness: z.strictObject({
    maxRssBytes: z.number().int().nonnegative().describe('peak resident memory of the harness process'),
  }),
});

export const BackendInfoSchema = z.strictObject({
  name: Name(),
  description: z.string(),
  isolation: z.enum(['none', 'sandbox']),
  enforces: z.array(z.string()),
  /** create() → the program's first output byte, over every execution of this card. */
  coldStartMs: z.strictObject({ samples: z.number().int(), median: z.number(), max: z.number() }).nullable(),
});

/** A harness failure, kept apart from the box's own failures. */
const HarnessError = z.strictObject({ code: z.string(), message: z.string() });

export const SecurityResultSchema = z.strictObject({
  id: Id(),
  title: Title(),
  category: Category,
  policyItem: Name(),
  severity: Severity,
  verdict: SecurityVerdict,
  reason: z.string(),
  remediation: z.string(),
  claimed: z
    .boolean()
    .optional()
    .describe("whether the backend claims the probe's policy item; the verdict is what was observed either way (false: ran although not claimed)"),
  attack: z.array(AttackTechniqueId).optional().describe('MITRE ATT&CK technique ids of the probe'),
  cwe: z.array(CweId).optional().describe('CWE ids of the weakness a crossing shows'),
  evidence: z.array(EvidenceSchema),
  durationMs: z.number().nonnegative(),
  observation: ExecObservationSchema.optional(),
  harnessError: HarnessError.optional(),
  waiver: WaiverNoteSchema.optional().describe('a live waiver (--waivers) accepts this crossing: the verdict stays, the exit code does not count it'),
});
export type SecurityResult = z.infer<typeof SecurityResultSchema>;

export const ArtifactRecordSchema = z.strictObject({
  path: z.string(),
  bytes: z.number().int().nonnegative(),
  sha256: z.string(),
});

export const AttemptRecordSchema = z.strictObject({
  attempt: z.number().int().positive(),
  verdict: TaskVerdict,
  reason: z.string(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  wallMs: z.number().nonnegative(),
});

export const TaskResultSchema = z.strictObject({
  id: Id(),
  title: Title(),
  policyItem: Name(),
  expected: ExpectedTaskVerdict,
  /** null when the harness could not evaluate the case (see harnessError) or it was not run (not-applicable). */
  verdict: TaskVerdict.nullable(),
  /** not-applicable: not run, for a cause the reason names (e.g. a box that writes no results); never counted as expected. */
  outcome: z.enum(['as-expected', 'unexpected', 'error', 'not-applicable']),
  reason: z.string(),
  evidence: z.array(EvidenceSchema),
  artifacts: z.array(ArtifactRecordSchema),
  /** Every attempt of the correction loop, in order. */
  attempts: z.array(AttemptRecordSchema),
  /** The controller's end-to-end budget: (1 + corrections) × wall + queue/startup. */
  budget: z.strictObject({ limitMs: z.number(), elapsedMs: z.number(), maxAttempts: z.number().int(), exhausted: z.boolean() }),
  /** Accepted cases run again in a fresh environment: did the artifacts come out identical? null = not replayed. */
  reproducible: z.boolean().nullable(),
  replayNote: z.string().optional(),
  durationMs: z.number().nonnegative(),
  observation: ExecObservationSchema.optional(),
  harnessError: HarnessError.optional(),
});
export type TaskResult = z.infer<typeof TaskResultSchema>;

export const SecuritySummarySchema = z.strictObject({
  total: z.number().int(),
  held: z.number().int(),
  crossed: z.number().int(),
  /** Policy items the policy requires and the backend does not enforce: failures, never skips. */
  unenforced: z.number().int(),
  inconclusive: z.number().int(),
  notApplicable: z.number().int(),
  /** Crossed or unenforced results a live waiver accepts (counted in crossed/unenforced too). */
  waived: z.number().int().optional(),
});

export const TaskSummarySchema = z.strictObject({
  total: z.number().int(),
  asExpected: z.number().int(),
  unexpected: z.number().int(),
  error: z.number().int(),
  /** Cases not run for a cause outside the program (absent in cards of older sandcheck versions). */
  notApplicable: z.number().int().optional(),
  nonReproducible: z.number().int(),
});

export const SecurityScorecardSchema = z
  .strictObject({
    scorecard: z.literal('security'),
    version: z.literal(SCORECARD_VERSION),
    run: RunInfo,
    backend: BackendInfoSchema,
    policy: PolicySchema,
    summary: SecuritySummarySchema,
    environment: EnvironmentSchema.optional().describe(
      'where the run ran: tool versions, kernel, cgroup mode, policy hash, backend configuration (absent in cards of older sandcheck versions)',
    ),
    results: z.array(SecurityResultSchema),
  })
  .meta({ id: 'sandcheck-security-scorecard', title: 'sandcheck security scorecard' });
export type SecurityScorecard = z.infer<typeof SecurityScorecardSchema>;

export const TaskScorecardSchema = z
  .strictObject({
    scorecard: z.literal('task'),
    version: z.literal(SCORECARD_VERSION),
    run: RunInfo,
    backend: BackendInfoSchema,
    policy: PolicySchema,
    summary: TaskSummarySchema,
    environment: EnvironmentSchema.optional().describe(
      'where the run ran: tool versions, kernel, cgroup mode, policy hash, backend configuration (absent in cards of older sandcheck versions)',
    ),
    results: z.array(TaskResultSchema),
  })
  .meta({ id: 'sandcheck-task-scorecard', title: 'sandcheck task scorecard' });
export type TaskScorecard = z.infer<typeof TaskScorecardSchema>;

/** The five report files of one pair of cards. */
export interface CardFiles {
  securityJson: string;
  taskJson: string;
  securityJunit: string;
  taskJunit: string;
  securitySarif: string;
}

/**
 * Writes one pair of cards as every report file (reports/write-cards.ts `writeScorecards`): handed to the run, which
 * never names the report formats itself. `harnessPeakUntilWritten`: the card's peak memory includes the writing.
 */
export type WriteCards = (
  dir: string,
  cards: { security: SecurityScorecard; task: TaskScorecard },
  options?: { harnessPeakUntilWritten?: boolean },
) => Promise<{ security: SecurityScorecard; task: TaskScorecard; files: CardFiles }>;
