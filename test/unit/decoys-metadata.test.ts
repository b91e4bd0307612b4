import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DecoyEventSchema, DecoyLog, type DecoyEvent } from '../../lab/decoys/decoy-log.js';
import type { DecoyHandle } from '../../lab/decoys/listen.js';
import { routeMetadata } from '../../lab/decoys/metadata-routes.js';
import { startMetadataDecoy } from '../../lab/decoys/metadata.js';

const canaries = {
  accessKeyId: 'ASIASANDCHECKCANARY1',
  secretAccessKey: 'sc-secret-7f3a9c',
  token: 'sc-session-token-51d2',
  imdsToken: 'sc-imds-token-a8e0',
};
const roleName = 'sandcheck-role';

interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function http(host: string, port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, method, path, headers, agent: false, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

function metadataEvents(log: DecoyLog): DecoyEvent[] {
  return log.events().filter((e) => e.service === 'metadata');
}

describe('metadata decoy on 127.0.0.1', () => {
  let log: DecoyLog;
  let decoy: DecoyHandle;
  let port: number;

  beforeEach(async () => {
    log = new DecoyLog();
    decoy = await startMetadataDecoy({ host: '127.0.0.1', port: 0, canaries, roleName, log });
    port = decoy.listeners[0]?.port ?? 0;
  });
  afterEach(async () => {
    await decoy.close();
  });

  it('reports its real port', () => {
    expect(decoy.listeners).toEqual([{ service: 'metadata', proto: 'tcp', host: '127.0.0.1', port }]);
    expect(port).toBeGreaterThan(0);
  });

  it('serves the IMDSv2 token flow and logs both requests with the dialled address', async () => {
    const token = await http('127.0.0.1', port, 'PUT', '/latest/api/token', {
      'X-aws-ec2-metadata-token-ttl-seconds': '21600',
    });
    expect(token.status).toBe(200);
    expect(token.body).toBe(canaries.imdsToken);
    expect(token.headers['x-aws-ec2-metadata-token-ttl-seconds']).toBe('21600');

    const role = await http('127.0.0.1', port, 'GET', '/latest/meta-data/iam/security-credentials/', {
      'X-aws-ec2-metadata-token': token.body,
    });
    expect(role.body).toBe(roleName);

    const creds = await http('127.0.0.1', port, 'GET', `/latest/meta-data/iam/security-credentials/${roleName}`, {
      'X-aws-ec2-metadata-token': token.body,
    });
    expect(creds.status).toBe(200);
    const json: unknown = JSON.parse(creds.body);
    expect(json).toMatchObject({
      Code: 'Success',
      Type: 'AWS-HMAC',
      AccessKeyId: canaries.accessKeyId,
      SecretAccessKey: canaries.secretAccessKey,
      Token: canaries.token,
    });

    const events = await waitForCount(log, 3);
    for (const event of events) {
      expect(DecoyEventSchema.parse(event)).toEqual(event);
      expect(event.proto).toBe('tcp');
      expect(event.local).toEqual({ address: '127.0.0.1', port });
      expect(event.peer.address).toBe('127.0.0.1');
      expect(event.peer.port).toBeGreaterThan(0);
    }
    expect(events.map((e) => e.summary)).toEqual([
      'PUT /latest/api/token',
      'GET /latest/meta-data/iam/security-credentials/',
      `GET /latest/meta-data/iam/security-credentials/${roleName}`,
    ]);
    expect(events[0]?.detail).toMatchObject({
      method: 'PUT',
      route: 'imds-token',
      status: '200',
      'header.x-aws-ec2-metadata-token-ttl-seconds': '21600',
    });
    expect(events[2]?.detail).toMatchObject({
      route: 'aws-credentials',
      provider: 'aws',
      imdsToken: 'valid',
      'header.x-aws-ec2-metadata-token': canaries.imdsToken,
    });
    const payload = Buffer.from(events[2]?.payloadBase64 ?? '', 'base64').toString('latin1');
    expect(payload).toContain(`GET /latest/meta-data/iam/security-credentials/${roleName} HTTP/1.1\r\n`);
  });

  it('answers IMDSv1 without a token (the careless cloud) and marks the token absent', async () => {
    const listing = await http('127.0.0.1', port, 'GET', '/latest/meta-data/');
    expect(listing.status).toBe(200);
    expect(listing.body.split('\n')).toContain('iam/');
    const creds = await http('127.0.0.1', port, 'GET', `/latest/meta-data/iam/security-credentials/${roleName}`);
    expect(JSON.parse(creds.body)).toMatchObject({ AccessKeyId: canaries.accessKeyId, Token: canaries.token });
    const events = await waitForCount(log, 2);
    expect(events[1]?.detail?.['imdsToken']).toBe('absent');
  });

  it('still answers with a forged token but records it as invalid', async () => {
    const creds = await http('127.0.0.1', port, 'GET', `/latest/meta-data/iam/security-credentials/${roleName}`, {
      'X-aws-ec2-metadata-token': 'forged',
    });
    expect(creds.status).toBe(200);
    const [event] = await waitForCount(log, 1);
    expect(event?.detail?.['imdsToken']).toBe('invalid');
  });

  it('refuses a token request without a valid TTL header', async () => {
    const missing = await http('127.0.0.1', port, 'PUT', '/latest/api/token');
    expect(missing.status).toBe(400);
    const tooLong = await http('127.0.0.1', port, 'PUT', '/latest/api/token', {
      'X-aws-ec2-metadata-token-ttl-seconds': '99999',
    });
    expect(tooLong.status).toBe(400);
    const wrongMethod = await http('127.0.0.1', port, 'GET', '/latest/api/token');
    expect(wrongMethod.status).toBe(405);
    const events = await waitForCount(log, 3);
    expect(events.map((e) => e.detail?.['route'])).toEqual(['imds-token-bad-ttl', 'imds-token-bad-ttl', 'imds-token-wrong-method']);
  });

  it('requires Metadata-Flavor: Google for GCP and then hands out the canary token', async () => {
    const path = '/computeMetadata/v1/instance/service-accounts/default/token';
    const refused = await http('127.0.0.1', port, 'GET', path);
    expect(refused.status).toBe(403);
    expect(refused.body).not.toContain(canaries.token);

    const granted = await http('127.0.0.1', port, 'GET', path, { 'Metadata-Flavor': 'Google' });
    expect(granted.status).toBe(200);
    expect(granted.headers['metadata-flavor']).toBe('Google');
    expect(JSON.parse(granted.body)).toEqual({ access_token: canaries.token, expires_in: 3599, token_type: 'Bearer' });

    const events = await waitForCount(log, 2);
    expect(events[0]?.detail).toMatchObject({ provider: 'gcp', status: '403', route: 'gcp-missing-flavor' });
    expect(events[1]?.detail).toMatchObject({ provider: 'gcp', status: '200', 'header.metadata-flavor': 'Google' });
  });

  it('serves Alibaba RAM credentials with the canaries', async () => {
    const role = await http('127.0.0.1', port, 'GET', '/latest/meta-data/ram/security-credentials/');
    expect(role.body).toBe(roleName);
    const creds = await http('127.0.0.1', port, 'GET', `/latest/meta-data/ram/security-credentials/${roleName}`);
    expect(JSON.parse(creds.body)).toMatchObject({
      AccessKeyId: canaries.accessKeyId,
      AccessKeySecret: canaries.secretAccessKey,
      SecurityToken: canaries.token,
      Code: 'Success',
    });
    const events = await waitForCount(log, 2);
    expect(events[1]?.detail).toMatchObject({ provider: 'alibaba', route: 'alibaba-credentials' });
  });

  it('requires Metadata: true for the Azure token', async () => {
    const refused = await http('127.0.0.1', port, 'GET', '/metadata/identity/oauth2/token?api-version=2018-02-01');
    expect(refused.status).toBe(400);
    const granted = await http('127.0.0.1', port, 'GET', '/metadata/identity/oauth2/token?resource=x', {
      Metadata: 'true',
    });
    expect(JSON.parse(granted.body)).toMatchObject({ access_token: canaries.token, token_type: 'Bearer' });
    const events = await waitForCount(log, 2);
    expect(events[1]?.summary).toBe('GET /metadata/identity/oauth2/token?resource=x');
    expect(events[1]?.detail?.['path']).toBe('/metadata/identity/oauth2/token');
  });

  it('answers unknown paths with 404 and still logs them, with the body', async () => {
    const res = await http('127.0.0.1', port, 'POST', '/latest/meta-data/nothing-here', {}, 'exfil=sc-body-42');
    expect(res.status).toBe(405);
    const missing = await http('127.0.0.1', port, 'GET', '/no/such/path');
    expect(missing.status).toBe(404);
    const events = await waitForCount(log, 2);
    expect(events[0]?.detail).toMatchObject({ method: 'POST', bodyBytes: '16' });
    expect(Buffer.from(events[0]?.payloadBase64 ?? '', 'base64').toString()).toContain('exfil=sc-body-42');
    expect(events[1]?.detail).toMatchObject({ status: '404', route: 'not-found' });
  });

  it('logs a connection that never sends a request, and a malformed request', async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => socket.end());
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    const silent = await log.waitFor((e) => e.detail?.['noRequest'] === 'true');
    expect(silent.local).toEqual({ address: '127.0.0.1', port });

    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => socket.write('NOT-HTTP \x00\x01\r\n\r\n'));
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    const malformed = await log.waitFor((e) => e.detail?.['malformed'] === 'true');
    expect(malformed.summary).toMatch(/^malformed HTTP request/);
  });

  it('stops accepting connections after close()', async () => {
    await decoy.close();
    await expect(http('127.0.0.1', port, 'GET', '/latest/meta-data/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await decoy.close(); // idempotent
  });
});

describe('metadata decoy on ::1', () => {
  it('logs the IPv6 address the client dialled', async () => {
    const log = new DecoyLog();
    const decoy = await startMetadataDecoy({ host: '::1', port: 0, canaries, roleName, log });
    try {
      const port = decoy.listeners[0]?.port ?? 0;
      const res = await http('::1', port, 'GET', '/latest/meta-data/iam/security-credentials/');
      expect(res.body).toBe(roleName);
      const [event] = await waitForCount(log, 1);
      expect(event?.local).toEqual({ address: '::1', port });
      expect(event?.peer.address).toBe('::1');
      expect(event?.detail?.['localIPv4']).toBeUndefined();
    } finally {
      await decoy.close();
    }
  });
});

describe('routeMetadata', () => {
  const ctx = { canaries, roleName, now: new Date('2030-01-02T03:04:05.678Z') };

  it('hands out the IMDSv2 token for the Alibaba TTL header too', () => {
    const reply = routeMetadata({ method: 'PUT', path: '/latest/api/token', headers: { 'x-aliyun-ecs-metadata-token-ttl-seconds': '60' } }, ctx);
    expect(reply).toMatchObject({ status: 200, body: canaries.imdsToken, provider: 'alibaba', route: 'imds-token' });
  });

  it('gives 404 for another role name and stamps credentials with the clock', () => {
    expect(routeMetadata({ method: 'GET', path: '/latest/meta-data/iam/security-credentials/other', headers: {} }, ctx)).toMatchObject({
      status: 404,
      route: 'not-found',
      provider: 'aws',
    });
    const creds = routeMetadata({ method: 'GET', path: `/latest/meta-data/iam/security-credentials/${roleName}/`, headers: {} }, ctx);
    expect(JSON.parse(creds.body)).toMatchObject({ LastUpdated: '2030-01-02T03:04:05Z', Expiration: '2030-01-02T09:04:05Z' });
  });

  it('serves the GCP token under the service account email as well as default', () => {
    const email = `${roleName}@sandcheck-decoy.iam.gserviceaccount.com`;
    const reply = routeMetadata(
      {
        method: 'GET',
        path: `/computeMetadata/v1/instance/service-accounts/${email}/token`,
        headers: { 'metadata-flavor': 'Google' },
      },
      ctx,
    );
    expect(reply.route).toBe('gcp-token');
    expect(reply.body).toContain(canaries.token);
  });
});

async function waitForCount(log: DecoyLog, count: number, timeoutMs = 5000): Promise<DecoyEvent[]> {
  const deadline = Date.now() + timeoutMs;
  while (metadataEvents(log).length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} metadata events, got ${metadataEvents(log).length}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return metadataEvents(log);
}
