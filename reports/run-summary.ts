import { z } from 'zod';
import { SecuritySummarySchema, TaskSummarySchema, type SecurityScorecard, type TaskScorecard } from '../model/scorecard.js';
import type { CardFiles } from './write-cards.js';

export const RUN_SUMMARY_VERSION = '1.0.0';

/** `sandcheck run --json`: the one document on stdout (progress and notices stay on stderr). */
export const RunSummarySchema = z
  .strictObject({
    summary: z.literal('sandcheck-run'),
    version: z.literal(RUN_SUMMARY_VERSION),
    exitCode: z.number().int().describe('the exit status of this run (docs/cli.md, "Exit codes")'),
    runId: z.string().max(128),
    backend: z.string().max(256),
    label: z.string().max(128).optional(),
    interrupted: z.boolean(),
    incomplete: z.boolean(),
    security: SecuritySummarySchema,
    task: TaskSummarySchema,
    reports: z.strictObject({
      securityJson: z.string(),
      taskJson: z.string(),
      securityJunit: z.string(),
      taskJunit: z.string(),
      securitySarif: z.string(),
    }),
    certify: z.strictObject({ dir: z.string(), manifest: z.string() }).optional().describe('the sign-off bundle (--certify)'),
    internalError: z.string().optional(),
    notices: z.array(z.string().max(4096)).max(1000).describe('waiver notices and where the step summary went, as the text output prints them'),
  })
  .meta({ id: 'sandcheck-run-summary', title: 'sandcheck run --json' });
export type RunSummary = z.infer<typeof RunSummarySchema>;

export function runSummary(
  outcome: { security: SecurityScorecard; task: TaskScorecard; files: CardFiles; internalError?: string },
  exitCode: number,
  extra: { certify?: { dir: string; manifest: string }; notices: string[] },
): RunSummary {
  const label = outcome.security.environment?.label;
  return RunSummarySchema.parse({
    summary: 'sandcheck-run',
    version: RUN_SUMMARY_VERSION,
    exitCode,
    runId: outcome.security.run.id,
    backend: outcome.security.backend.name,
    ...(label !== undefined ? { label } : {}),
    interrupted: outcome.security.run.interrupted,
    incomplete: outcome.security.run.incomplete,
    security: outcome.security.summary,
    task: outcome.task.summary,
    reports: {
      securityJson: outcome.files.securityJson,
      taskJson: outcome.files.taskJson,
      securityJunit: outcome.files.securityJunit,
      taskJunit: outcome.files.taskJunit,
      securitySarif: outcome.files.securitySarif,
    },
    ...(extra.certify ? { certify: extra.certify } : {}),
    ...(outcome.internalError !== undefined ? { internalError: outcome.internalError } : {}),
    notices: extra.notices.slice(0, 1000).map((n) => n.slice(0, 4096)),
  });
}
