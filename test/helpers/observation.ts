import type { ExecObservation } from '../../model/observation.js';
import type { Observation } from '../../model/probe.js';

/** A capture summary holding `text` in its head (judges read the head and the tail). */
export const capture = (text = ''): ExecObservation['stdout'] => ({
  bytes: text.length,
  sha256: 'x',
  truncated: false,
  headBase64: Buffer.from(text).toString('base64'),
  tailBase64: '',
  preview: text,
});

/** An observation for judge tests: a payload that answered its challenge, ended with exit 0, and nothing else seen. */
export function fakeObservation(exec: Partial<ExecObservation> = {}, rest: Partial<Observation> = {}): Observation {
  return {
    exec: {
      exitCode: 0,
      signal: null,
      wallMs: 1000,
      harnessDeadlineMs: 7000,
      killedBy: 'none',
      backendReport: { timedOut: false, oomKilled: false, outputTruncated: false },
      stdout: capture(),
      stderr: capture(),
      ...exec,
    },
    attempted: true,
    finished: false,
    token: (kind) => `token-${kind}`,
    canaryHits: [],
    artifacts: [],
    leftovers: [],
    survivors: [],
    socketContacts: 0,
    ...rest,
  };
}
