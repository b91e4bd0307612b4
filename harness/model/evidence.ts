import { z } from 'zod';

export const EvidenceSource = z.enum(['outside', 'inside']);

export const EvidenceSchema = z.strictObject({
  /** outside: observed by the harness; inside: what the payload said about itself (never decides a pass). */
  source: EvidenceSource,
  witness: z.string().min(1).describe('who observed it: canary-scan, harness-clock, output-capture, exit-status, payload-report, …'),
  where: z.string().optional().describe('channel or location: stdout, stderr, artifact:<path>, cgroup:<file>, decoy:<service>'),
  detail: z.string(),
});
export type Evidence = z.infer<typeof EvidenceSchema>;

export const outside = (witness: string, detail: string, where?: string): Evidence =>
  where === undefined ? { source: 'outside', witness, detail } : { source: 'outside', witness, detail, where };
export const inside = (witness: string, detail: string, where?: string): Evidence =>
  where === undefined ? { source: 'inside', witness, detail } : { source: 'inside', witness, detail, where };
