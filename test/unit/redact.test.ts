import { describe, expect, it } from 'vitest';
import { makeCanaries } from '../../lab/canaries.js';
import { redact, redactDeep, redactSecrets } from '../../reports/redact.js';

// Shapes only: AWS's documented example key pair and synthetic tokens built here, never real values.
const AKID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const b64url = (s: string): string => Buffer.from(s).toString('base64url');
const JWT = `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url('{"sub":"sandcheck-test","iat":1}')}.${'s'.repeat(43)}`;
const YA29 = `ya29.${'A0ARrdaM'.repeat(6)}`;
const SESSION = 'IQoJb3JpZ2luX2VjE'.repeat(8);

describe('redact', () => {
  it('replaces every credential shape, keeping the label and saying what was there', () => {
    const imds = `{"Code":"Success","AccessKeyId":"${AKID}","SecretAccessKey":"${SECRET}","Token":"${SESSION}"}`;
    const { text, redacted } = redactSecrets(
      [
        `IMDSv1 creds: ${imds}`,
        `aws_secret_access_key = ${SECRET}`,
        `gcp: {"access_token":"${YA29}","expires_in":3599}`,
        `azure: Authorization: Bearer ${JWT}`,
        'blob: https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=abcdEFGHijklMNOPqrstUVWX%2Fyz0123456789%3D',
        `-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA${'x'.repeat(64)}\n-----END RSA PRIVATE KEY-----`,
        `cut: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC`,
      ].join('\n'),
    );
    for (const secret of [AKID, SECRET, SESSION, YA29, JWT, 'abcdEFGHijklMNOPqrstUVWX', 'MIIEowIBAAKCAQEA', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC']) {
      expect(text).not.toContain(secret);
    }
    expect(new Set(redacted)).toEqual(
      new Set(['aws-access-key-id', 'aws-secret-access-key', 'aws-session-token', 'gcp-access-token', 'jwt', 'azure-sas-signature', 'private-key']),
    );
    expect(text).toContain('"SecretAccessKey":"[REDACTED aws-secret-access-key, 40 chars, sha256 ');
    expect(text).toContain('aws_secret_access_key = [REDACTED aws-secret-access-key');
    expect(text).toContain('sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=[REDACTED azure-sas-signature');
  });

  it('never redacts a value with the canary prefix: the decoys of a run stay visible', () => {
    const c = makeCanaries();
    const text = [
      c.files['.aws/credentials'],
      c.files['.ssh/id_ed25519'],
      `AccessKeyId ${c.env['AWS_ACCESS_KEY_ID']}`,
      `sig=${c.env['SANDCHECK_CONTROL_PLANE_TOKEN']}`,
    ].join('\n');
    const out = redactSecrets(text);
    expect(out.redacted).toEqual([]);
    expect(out.text).toBe(text);
    // Forty characters of decoy after a secret label, too.
    expect(redact(`aws_secret_access_key=SCNRY${'a'.repeat(35)}`)).toBe(`aws_secret_access_key=SCNRY${'a'.repeat(35)}`);
  });

  it('leaves ordinary text alone', () => {
    const text = 'GET /latest/meta-data/ 200; sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08; AKIA is a prefix; eyJ alone';
    expect(redact(text)).toBe(text);
  });

  it('redacts inside a scorecard, base64 capture fields included, without touching other bytes', () => {
    const head = Buffer.concat([Buffer.from([0, 255, 10]), Buffer.from(`creds ${AKID}\n`)]);
    const card = { results: [{ reason: `leaked ${YA29}`, exec: { stdout: { headBase64: head.toString('base64'), bytes: head.length } }, n: 3 }] };
    const out = redactDeep(card);
    const decoded = Buffer.from(out.results[0]?.exec.stdout.headBase64 ?? '', 'base64');
    expect(decoded.subarray(0, 3)).toEqual(Buffer.from([0, 255, 10]));
    expect(decoded.toString('latin1')).not.toContain(AKID);
    expect(out.results[0]?.reason).not.toContain(YA29);
    expect(out.results[0]?.n).toBe(3);
    expect(card.results[0]?.reason).toContain(YA29);
  });
});
