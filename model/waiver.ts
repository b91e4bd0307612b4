import { z } from 'zod';

/** 16 hex characters: the start of a sha256 over a result's outside evidence (see harness/waivers.ts). */
export const FINGERPRINT = /^[0-9a-f]{16}$/;

/** What a waived result carries in the scorecard: who accepted it, why, until when. */
export const WaiverNoteSchema = z.strictObject({
  reason: z.string().min(1).max(1024),
  owner: z.string().min(1).max(256),
  expires: z.iso.date().describe('last day (UTC) the waiver is live, YYYY-MM-DD'),
});
export type WaiverNote = z.infer<typeof WaiverNoteSchema>;

export const WaiverSchema = z
  .strictObject({
    probe: z.string().min(1).max(128).describe('the probe or task case id (or, in the gate, a policy item whose claim was dropped)'),
    backend: z.string().min(1).max(256).optional().describe('the backend name it applies to; absent = any backend'),
    ...WaiverNoteSchema.shape,
    fingerprint: z
      .string()
      .regex(FINGERPRINT, 'expected 16 lowercase hex characters, as printed by `sandcheck compare` or `run --waivers`')
      .optional()
      .describe('accept only a result whose outside evidence has this fingerprint'),
  })
  .meta({ id: 'sandcheck-waiver' });
export type Waiver = z.infer<typeof WaiverSchema>;

export const WaiverListSchema = z.array(WaiverSchema);
export const WaiversObjectSchema = z.strictObject({ waivers: WaiverListSchema });

/** A waivers file: a list of accepted findings, bare or under `waivers:`. */
export const WaiversFileSchema = z
  .union([WaiverListSchema, WaiversObjectSchema])
  .meta({ id: 'sandcheck-waivers', title: 'sandcheck waivers (accepted findings)' });
