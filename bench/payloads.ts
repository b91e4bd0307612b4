import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { PutFile } from '../model/backend-contract.js';
import type { Judgement, SecurityProbe } from '../model/probe.js';
import { CANARY_PREFIX } from '../lab/canaries.js';
import { payloadPath } from '../core/paths.js';
import { CHALLENGE_FILE, CONTROL_ENV, makeControlValue, makeProof } from '../lab/proof.js';
import { secretDecoyEnv } from '../probes/secret-decoy-env/probe.js';

/**
 * One payload as every side runs it: the raw tool and the adapter get exactly the argv, files and
 * environment the harness would give the box for that probe (fresh challenge and control each round).
 */
export interface BenchPayload {
  name: string;
  /** The probe the harness side runs through the Runner. */
  probe: SecurityProbe;
  /** A fresh execution: argv, files to put in the workspace, extra environment. */
  prepare(): Promise<PreparedPayload>;
}

export interface PreparedPayload {
  argv: string[];
  files: PutFile[];
  env: Record<string, string>;
}

const inconclusive = (): Judgement => ({ verdict: 'inconclusive', reason: 'benchmark payload: nothing is judged', evidence: [] });

/** `python3 -c pass` for the raw tool and the adapter; the harness runs the same no-op as its payload.py. */
export const passPayload: BenchPayload = {
  name: 'pass',
  probe: {
    kind: 'security',
    id: 'bench-pass',
    title: 'benchmark: python3 doing nothing',
    category: 'identity',
    policyItem: secretDecoyEnv.policyItem,
    severity: 'low',
    payload: 'bench-pass',
    source: 'pass\n',
    remediation: 'none (benchmark)',
    attack: secretDecoyEnv.attack,
    cwe: secretDecoyEnv.cwe,
    judge: inconclusive,
  },
  prepare: () => Promise.resolve({ argv: ['python3', '-c', 'pass'], files: [], env: {} }),
};

/** A real probe's payload (secret-decoy-env: reads its environment and every /proc/<pid>/environ it can see). */
export const probePayload: BenchPayload = {
  name: secretDecoyEnv.id,
  probe: secretDecoyEnv,
  async prepare() {
    const payload = await readFile(payloadPath(secretDecoyEnv.payload));
    const helper = await readFile(payloadPath('_shared', 'sandcheck_payload.py'));
    const proof = makeProof(payload, helper);
    const nonce = randomBytes(8).toString('hex');
    // What secretDecoyEnv.args() gives, plus the nonce and id the Runner adds.
    const args = { nonce, probe: secretDecoyEnv.id, canaryPrefix: CANARY_PREFIX };
    return {
      argv: ['python3', 'payload.py', JSON.stringify(args)],
      files: [
        { path: 'payload.py', content: payload, readOnly: true },
        { path: 'sandcheck_payload.py', content: helper, readOnly: true },
        { path: CHALLENGE_FILE, content: Buffer.from(`${proof.challenge}\n`), readOnly: true },
      ],
      env: { [CONTROL_ENV]: makeControlValue() },
    };
  },
};

export const PAYLOADS: readonly BenchPayload[] = [passPayload, probePayload];
