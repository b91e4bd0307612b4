import { describe, expect, it } from 'vitest';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { DecoyEvent } from '../../lab/decoys/decoy-log.js';
import { frontRoute } from '../../lab/decoys/front.js';
import { controlTarget } from '../../probes/_shared/allowlist.js';
import { allowlistSuite } from '../../suites/allowlist.js';
import { selectProbes, securitySuite } from '../../suites/index.js';
import { ctx, obs, packet, seeing } from '../helpers/network-obs.js';

const ALLOW: Policy = { ...CI_POLICY, network: { mode: 'allowlist', allow: ['tcp:203.0.113.20:80', 'udp:192.0.2.53:53'] } };
const [rebinding] = allowlistSuite;
const mark = 'scabcd1234';

const httpEvent = (address: string, port: number, path: string, service: DecoyEvent['service'] = 'canary-http'): DecoyEvent => ({
  time: new Date().toISOString(),
  service,
  proto: 'tcp',
  local: { address, port },
  peer: { address: '198.51.100.81', port: 40000 },
  summary: `GET ${path}`,
  payloadBase64: Buffer.from(`GET ${path} HTTP/1.0\r\n\r\n`).toString('base64'),
});
const control = httpEvent('203.0.113.20', 80, `/${mark}-control`);

describe('allowlist probes: judged from the lab only', () => {
  it('are opt-in: out of the default suite, selectable with --only, not applicable without an allowlist', () => {
    expect(securitySuite.some((p) => p.id.startsWith('allowlist-'))).toBe(false);
    expect(selectProbes(undefined).some((p) => p.id.startsWith('allowlist-'))).toBe(false);
    expect(selectProbes(['allowlist-host-sni']).map((p) => p.id)).toEqual(['allowlist-host-sni']);
    for (const p of allowlistSuite) {
      expect(p.hostPrecondition?.(ctx(CI_POLICY)), p.id).toMatch(/no network allowlist/);
      expect(p.hostPrecondition?.(ctx(ALLOW)), p.id).toBeUndefined();
    }
  });

  it('a marked contact at a denied address is crossed; at an allowed one it is the control; held needs the control', () => {
    const crossed = rebinding?.judge(obs({ events: [control, httpEvent('169.254.169.254', 80, `/?${mark}-rebind-metadata`, 'metadata')] }), ctx(ALLOW));
    expect(crossed?.verdict).toBe('crossed');
    expect(crossed?.reason).toContain('tcp 169.254.169.254:80');
    expect(rebinding?.judge(obs({ events: [control] }), ctx(ALLOW)).verdict).toBe('held');
    // An unmarked contact of another execution does not count (except a metadata contact, which always does).
    expect(rebinding?.judge(obs({ events: [control, httpEvent('192.0.2.10', 80, '/other')] }), ctx(ALLOW)).verdict).toBe('held');
    expect(rebinding?.judge(obs({ events: [control, httpEvent('169.254.169.254', 80, '/latest', 'metadata')] }), ctx(ALLOW)).verdict).toBe('crossed');
    const silent = rebinding?.judge(obs({}), ctx(ALLOW));
    expect(silent?.verdict).toBe('inconclusive');
    expect(silent?.reason).toMatch(/positive control failed.*203\.0\.113\.20:80/);
    expect(rebinding?.judge(obs({ events: [control], witness: { ...seeing, proofOfLife: false } }), ctx(ALLOW)).verdict).toBe('inconclusive');
  });

  it('a marked DNS datagram counts by the address the capture saw: the allowed resolver is allowed, a second one is not', () => {
    const dns = (dst: string) => ({ ...packet('udp', dst, 53), raw: `1.0 lo In IP x > ${dst}.53: A? ${mark}-dns.x.exfil.example.` });
    expect(rebinding?.judge(obs({ events: [control], packets: [dns('192.0.2.53')] }), ctx(ALLOW)).verdict).toBe('held');
    expect(rebinding?.judge(obs({ events: [control], packets: [dns('198.51.100.53')] }), ctx(ALLOW)).reason).toContain('udp 198.51.100.53:53');
  });

  it('the control target comes from the allowlist; the front routes by CONNECT, absolute URI, Host and SNI', () => {
    expect(controlTarget(ALLOW)).toEqual({ address: '203.0.113.20', port: 80, name: 'control.allowed.sandcheck.example' });
    expect(controlTarget({ ...CI_POLICY, network: { mode: 'allowlist', allow: ['udp:192.0.2.53:53', 'tcp:198.51.100.0/24:443'] } })).toEqual({
      address: '198.51.100.10',
      port: 443,
    });
    expect(frontRoute(Buffer.from('CONNECT [64:ff9b::a9fe:a9fe]:80 HTTP/1.1\r\n\r\n'))).toEqual({
      how: 'connect',
      via: 'CONNECT',
      host: '64:ff9b::a9fe:a9fe',
      port: 80,
    });
    expect(frontRoute(Buffer.from('GET http://203.0.113.66/x HTTP/1.0\r\n\r\n'))).toEqual({
      how: 'forward',
      via: 'absolute-uri',
      host: '203.0.113.66',
      port: 80,
    });
    expect(frontRoute(Buffer.from('GET /x HTTP/1.0\r\nHost: Denied.Example:8080\r\n\r\n'))).toEqual({
      how: 'forward',
      via: 'host',
      host: 'denied.example',
      port: 8080,
    });
    expect(frontRoute(Buffer.from('hello\n'))).toBeUndefined();
  });
});

describe('the policy-filter test mode with holes', () => {
  it('takes policy allow entries as holes, only in policy-filter mode, and refuses an entry it cannot read', () => {
    expect(new ProcessBackend({ network: 'policy-filter', filterHoles: ['127.0.0.0/8', '64:ff9b::/96', 'tcp:192.0.2.53:53'] }).description).toMatch(
      /with holes for 127\.0\.0\.0\/8, 64:ff9b::\/96, tcp:192\.0\.2\.53:53$/,
    );
    expect(() => new ProcessBackend({ filterHoles: ['127.0.0.0/8'] })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(/only to the policy-filter/) }),
    );
    expect(() => new ProcessBackend({ network: 'policy-filter', filterHoles: ['tcp:nowhere'] })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(/filter hole "tcp:nowhere"/) }),
    );
  });
});
