import { createHash } from 'node:crypto';
import { CANARY_PREFIX } from '../lab/canaries.js';

/**
 * Report text must never carry a real credential of the machine (under --live-network a metadata
 * service may answer with one). Everything shaped like a cloud credential is replaced by its kind,
 * length and a short hash; values that start with the run's canary prefix stay, so the canary scan
 * and the reader still see decoys come out.
 */

export type SecretKind =
  | 'private-key'
  | 'aws-access-key-id'
  | 'aws-secret-access-key'
  | 'aws-session-token'
  | 'gcp-access-token'
  | 'jwt'
  | 'azure-sas-signature'
  | 'azure-account-key';

interface Rule {
  kind: SecretKind;
  pattern: RegExp;
  /** Index of the capture group holding the secret; 0 = the whole match. */
  group: number;
}

const B64 = '[A-Za-z0-9/+=]';
const RULES: readonly Rule[] = [
  // A whole PEM block, or what is left of one when the capture was cut inside it.
  { kind: 'private-key', pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----([\s\S]*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, group: 0 },
  { kind: 'aws-access-key-id', pattern: /\b(?:AKIA|ASIA|AROA|AIDA|AGPA|ANPA|AIPA)[A-Z0-9]{16}\b/g, group: 0 },
  {
    kind: 'aws-secret-access-key',
    pattern: new RegExp(`(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)["']?\\s*[:=]\\s*["']?(${B64}{40})(?!${B64})`, 'gi'),
    group: 1,
  },
  {
    kind: 'aws-session-token',
    pattern: new RegExp(`(?:aws_?session_?token|session_?token|x-amz-security-token|"token")["']?\\s*[:=]\\s*["']?(${B64}{100,})`, 'gi'),
    group: 1,
  },
  { kind: 'gcp-access-token', pattern: /\bya29\.[0-9A-Za-z_-]{20,}/g, group: 0 },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { kind: 'azure-sas-signature', pattern: /\bsig=([A-Za-z0-9%/+=]{16,})/g, group: 1 },
  { kind: 'azure-account-key', pattern: new RegExp(`\\bAccountKey=(${B64}{40,})`, 'g'), group: 1 },
];

export interface RedactResult {
  text: string;
  /** One entry per value replaced, in order of the rules. */
  redacted: SecretKind[];
}

function marker(kind: SecretKind, secret: string): string {
  const hash = createHash('sha256').update(secret).digest('hex').slice(0, 8);
  return `[REDACTED ${kind}, ${secret.length} chars, sha256 ${hash}]`;
}

/** A PEM block whose body is a canary (the decoy key files) is a decoy. */
function isDecoy(kind: SecretKind, secret: string, keepPrefix: string): boolean {
  if (kind !== 'private-key') return secret.startsWith(keepPrefix);
  const body = secret.replace(/-----(BEGIN|END) [A-Z0-9 ]*PRIVATE KEY-----/g, '').trim();
  return body.startsWith(keepPrefix);
}

/** Replaces every credential-shaped value except those starting with `keepPrefix` (the run's canary prefix). */
export function redactSecrets(text: string, keepPrefix: string = CANARY_PREFIX): RedactResult {
  const redacted: SecretKind[] = [];
  let out = text;
  for (const rule of RULES) {
    out = out.replace(rule.pattern, (...m: unknown[]) => {
      const whole = String(m[0]);
      const secret = rule.group === 0 ? whole : String(m[rule.group] ?? '');
      if (secret === '' || isDecoy(rule.kind, secret, keepPrefix)) return whole;
      redacted.push(rule.kind);
      if (rule.group === 0) return marker(rule.kind, secret);
      const at = whole.lastIndexOf(secret);
      return `${whole.slice(0, at)}${marker(rule.kind, secret)}${whole.slice(at + secret.length)}`;
    });
  }
  return { text: out, redacted };
}

/** Report text with every credential-shaped value replaced. */
export function redact(text: string): string {
  return redactSecrets(text).text;
}

/** Keys whose string values are base64 of captured bytes: redacted in their decoded (latin1) form. */
export const BASE64_KEYS: readonly string[] = ['headBase64', 'tailBase64', 'payloadBase64', 'bodyBase64'];

function redactBase64(value: string): string {
  const bytes = Buffer.from(value, 'base64');
  const { text, redacted } = redactSecrets(bytes.toString('latin1'));
  return redacted.length === 0 ? value : Buffer.from(text, 'latin1').toString('base64');
}

/** A copy of a JSON-like value (a scorecard) with every string redacted; base64 capture fields decoded first. */
export function redactDeep<T>(value: T, base64Keys: readonly string[] = BASE64_KEYS): T {
  const walk = (v: unknown, key: string | undefined): unknown => {
    if (typeof v === 'string') return key !== undefined && base64Keys.includes(key) ? redactBase64(v) : redact(v);
    if (Array.isArray(v)) return v.map((item) => walk(item, undefined));
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, k)]));
    }
    return v;
  };
  return walk(value, undefined) as T;
}
