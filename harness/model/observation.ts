import { z } from 'zod';

/** What the harness kept of one output channel: bounded head and tail, exact count and hash of everything. */
export const CaptureSummarySchema = z.strictObject({
  bytes: z.number().int().nonnegative(),
  sha256: z.string(),
  truncated: z.boolean(),
  headBase64: z.string(),
  tailBase64: z.string(),
  /** Head as text with control characters made visible; for humans. */
  preview: z.string(),
});
export type CaptureSummary = z.infer<typeof CaptureSummarySchema>;

export const KilledBy = z.enum(['none', 'harness-deadline', 'harness-output-ceiling', 'harness-interrupt', 'backend']);
export type KilledBy = z.infer<typeof KilledBy>;

/** A backend-reported fact that the backend may not be able to know. */
export const Tristate = z.union([z.boolean(), z.literal('unknown')]);
export type Tristate = z.infer<typeof Tristate>;

export const ExecObservationSchema = z.strictObject({
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** Measured by the harness's own clock, from exec call to result. */
  wallMs: z.number().nonnegative(),
  harnessDeadlineMs: z.number().nonnegative(),
  killedBy: KilledBy,
  /** The program could not be started at all (e.g. interpreter missing). */
  startError: z.string().optional(),
  backendReport: z.strictObject({
    timedOut: Tristate,
    oomKilled: Tristate,
    outputTruncated: Tristate,
  }),
  stdout: CaptureSummarySchema,
  stderr: CaptureSummarySchema,
});
export type ExecObservation = z.infer<typeof ExecObservationSchema>;
