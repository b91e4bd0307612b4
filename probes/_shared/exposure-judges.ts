import { outside, type Evidence } from '../../model/evidence.js';
import type { Observation } from '../../model/probe.js';

/** stdout and stderr as the harness kept them (head and tail), as text. */
export function outputText(obs: Observation): string {
  const { stdout, stderr } = obs.exec;
  return [stdout.headBase64, stdout.tailBase64, stderr.headBase64, stderr.tailBase64].map((b) => Buffer.from(b, 'base64').toString('utf8')).join('\n');
}

/** A harness-derived value (a challenge answer) came out: the payload's own routine demonstrably worked. */
export function tokenInOutput(obs: Observation, token: string): boolean {
  return outputText(obs).includes(token);
}

/**
 * A field of the payload's `SANDCHECK-REPORT {json}` line (inside evidence: it may only make a verdict
 * inconclusive, never turn a crossing into a pass). `undefined` when absent or unreadable.
 */
export function reportedField(obs: Observation, ...keys: string[]): unknown {
  const line = outputText(obs)
    .split('\n')
    .find((l) => l.startsWith('SANDCHECK-REPORT '));
  if (line === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line.slice('SANDCHECK-REPORT '.length));
  } catch {
    return undefined;
  }
  for (const k of keys) {
    if (typeof value !== 'object' || value === null || !(k in value)) return undefined;
    value = (value as Record<string, unknown>)[k];
  }
  return value;
}

const SOCKET_NAMES: Record<string, string> = {
  'daemon-socket': 'host decoy daemon socket',
  'agent-socket': 'host decoy SSH agent socket',
  'abstract-socket': 'abstract socket decoy in the lab network namespace',
};

/** Outside evidence: host decoy sockets that logged a connection carrying this execution's nonce. */
export function decoyContactEvidence(obs: Observation, kinds: readonly string[]): Evidence[] {
  return kinds.flatMap((k) => {
    const n = k === 'daemon-socket' ? Math.max(obs.socketContacts, obs.decoyContacts?.[k] ?? 0) : (obs.decoyContacts?.[k] ?? 0);
    return n > 0 ? [outside('decoy-socket', `${n} connection(s) carrying this execution's nonce`, SOCKET_NAMES[k] ?? k)] : [];
  });
}
