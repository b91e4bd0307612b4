/**
 * One observation behind a verdict. The schema a scorecard validates it with is in scorecard.ts, so that the
 * probes, which build evidence, do not load zod (model/evidence.ts is imported by `sandcheck list`).
 */
export interface Evidence {
  /** outside: observed by the harness; inside: what the payload said about itself (never decides a pass). */
  source: 'outside' | 'inside';
  /** who observed it: canary-scan, harness-clock, output-capture, exit-status, payload-report, … */
  witness: string;
  /** channel or location: stdout, stderr, artifact:<path>, cgroup:<file>, decoy:<service> */
  where?: string | undefined;
  detail: string;
}

export const outside = (witness: string, detail: string, where?: string): Evidence =>
  where === undefined ? { source: 'outside', witness, detail } : { source: 'outside', witness, detail, where };
export const inside = (witness: string, detail: string, where?: string): Evidence =>
  where === undefined ? { source: 'inside', witness, detail } : { source: 'inside', witness, detail, where };
