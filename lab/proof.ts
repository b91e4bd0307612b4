import { createHash, randomBytes } from 'node:crypto';
import { CANARY_PREFIX } from './canaries.js';

/** Beside payload.py in the workspace; read by probes/_shared/sandcheck_payload.py. */
export const CHALLENGE_FILE = 'sandcheck-challenge';
export const CONTROL_FILE = 'sandcheck-control';
export const CONTROL_ENV = 'SANDCHECK_POSITIVE_CONTROL';

/**
 * One execution's challenge and the answers only the payload's own code can give: each is
 * derived from the challenge (a file in the box, never argv or env) and the sha256 of the
 * payload and helper sources that were put in.
 */
export interface ExecProof {
  challenge: string;
  token(kind: string): string;
  attemptLine: string;
  doneLine: string;
}

const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

export function makeProof(payload: Uint8Array, helper: Uint8Array, challenge: string = randomBytes(16).toString('hex')): ExecProof {
  const base = `${challenge}:${sha256(payload)}:${sha256(helper)}`;
  const cache = new Map<string, string>();
  const token = (kind: string): string => {
    let t = cache.get(kind);
    if (t === undefined) cache.set(kind, (t = sha256(`${base}:${kind}`).slice(0, 32)));
    return t;
  };
  return { challenge, token, attemptLine: `SANDCHECK-ATTEMPT ${token('attempt')}`, doneLine: `SANDCHECK-DONE ${token('done')}` };
}

/** A decoy-shaped value the box may read: payloads print it through the same code path as a canary. */
export function makeControlValue(): string {
  return `${CANARY_PREFIX}POSCTL${randomBytes(12).toString('hex')}`;
}
