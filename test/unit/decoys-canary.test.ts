import { createSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { startCanaryTcp, startCatchAllUdp } from '../../lab/decoys/canary-host.js';
import { DecoyEventSchema, DecoyLog, MAX_PAYLOAD_BYTES, type DecoyEvent } from '../../lab/decoys/decoy-log.js';
import type { DecoyHandle } from '../../lab/decoys/listen.js';
import { createMetadataDecoy } from '../../lab/decoys/metadata.js';
import { tlsClientHelloSni } from '../../lab/decoys/tcp-sniff.js';

const BANNER = 'sandcheck-canary-run-0f1e';

interface Exchange {
  reply: string;
  clientPort: number;
}

/** Connects, optionally writes and half-closes, and collects everything until the server closes. */
function exchange(host: string, port: number, send: Buffer | string | undefined, halfClose = false): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    let clientPort = 0;
    const socket = connect({ host, port }, () => {
      clientPort = socket.localPort ?? 0;
      if (send !== undefined) socket.write(send);
      if (halfClose) socket.end();
    });
    let reply = '';
    socket.setTimeout(8000, () => socket.destroy(new Error('canary exchange timed out')));
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')));
    socket.on('close', () => resolve({ reply, clientPort }));
    socket.on('error', reject);
  });
}

const handles: DecoyHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.close()));
});

async function canary(log: DecoyLog, host = '127.0.0.1', extra: { idleTimeoutMs?: number; maxConnections?: number } = {}) {
  const handle = await startCanaryTcp({ host, port: 0, banner: BANNER, log, idleTimeoutMs: 200, ...extra });
  handles.push(handle);
  return { handle, port: handle.listeners[0]?.port ?? 0 };
}

describe('canary TCP', () => {
  it('answers HTTP with a 200 carrying the banner and logs dialled address, peer and request', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log);
    const { reply, clientPort } = await exchange('127.0.0.1', port, 'GET /sc-path-77?x=1 HTTP/1.1\r\nHost: sc-host.exfil.example\r\nUser-Agent: probe\r\n\r\n');
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(reply).toContain(`\r\n\r\n${BANNER}\n`);

    const event = await log.waitFor(() => true);
    expect(DecoyEventSchema.parse(event)).toEqual(event);
    expect(event).toMatchObject({
      service: 'canary-http',
      proto: 'tcp',
      local: { address: '127.0.0.1', port },
      peer: { address: '127.0.0.1', port: clientPort },
      summary: 'GET /sc-path-77?x=1',
    });
    expect(event.detail).toMatchObject({ host: 'sc-host.exfil.example', userAgent: 'probe', endedBy: 'http-head' });
    expect(Buffer.from(event.payloadBase64, 'base64').toString()).toContain('Host: sc-host.exfil.example');
  });

  it('writes the banner raw to anything else after the idle timeout', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log);
    const started = Date.now();
    const { reply } = await exchange('127.0.0.1', port, 'SSH-2.0-probe\r\n');
    expect(reply).toBe(`${BANNER}\n`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    const event = await log.waitFor(() => true);
    expect(event.service).toBe('catch-all-tcp');
    expect(event.summary).toBe('TCP 15 bytes: SSH-2.0-probe..');
    expect(event.detail).toMatchObject({ bytes: '15', endedBy: 'idle' });
  });

  it('logs a connection that sends nothing and half-closes', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log);
    const { reply } = await exchange('127.0.0.1', port, undefined, true);
    expect(reply).toBe(`${BANNER}\n`);
    const event = await log.waitFor(() => true);
    expect(event).toMatchObject({ service: 'catch-all-tcp', summary: 'TCP connection without data', payloadBase64: '' });
    expect(event.detail?.['endedBy']).toBe('peer-end');
  });

  it('keeps only the first 4 KiB', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log);
    await exchange('127.0.0.1', port, Buffer.alloc(10_000, 0x41));
    const event = await log.waitFor(() => true);
    expect(Buffer.from(event.payloadBase64, 'base64')).toHaveLength(MAX_PAYLOAD_BYTES);
    expect(event.detail?.['endedBy']).toBe('byte-cap');
    expect(Number(event.detail?.['bytes'])).toBeGreaterThanOrEqual(MAX_PAYLOAD_BYTES);
  });

  it('records the server name of a TLS ClientHello', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log);
    await new Promise<void>((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'sc-tls.exfil.example', rejectUnauthorized: true });
      socket.on('error', () => resolve()); // the banner is no TLS
      socket.on('close', () => resolve());
    });
    const event = await log.waitFor(() => true);
    expect(event).toMatchObject({ service: 'catch-all-tcp', summary: 'TLS ClientHello sni=sc-tls.exfil.example' });
    expect(event.detail).toMatchObject({ tlsSni: 'sc-tls.exfil.example', endedBy: 'tls-record' });
    expect(tlsClientHelloSni(Buffer.from(event.payloadBase64, 'base64'))).toBe('sc-tls.exfil.example');
  });

  it('logs the IPv6 dialled address on ::1', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log, '::1');
    const { clientPort } = await exchange('::1', port, 'HEAD / HTTP/1.0\r\n\r\n');
    const event = await log.waitFor(() => true);
    expect(event.local).toEqual({ address: '::1', port });
    expect(event.peer).toEqual({ address: '::1', port: clientPort });
  });

  it('drops and logs connections past the maximum', async () => {
    const log = new DecoyLog();
    const { port } = await canary(log, '127.0.0.1', { maxConnections: 1, idleTimeoutMs: 2000 });
    const first = connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => first.once('connect', () => resolve()));
    const second = await exchange('127.0.0.1', port, undefined);
    expect(second.reply).toBe('');
    const dropped = await log.waitFor((e) => e.detail?.['dropped'] === 'true');
    expect(dropped.peer.port).toBe(second.clientPort);
    first.destroy();
  });

  it('hands connections for a diverted address to that handler (metadata behind a wildcard)', async () => {
    const log = new DecoyLog();
    const metadata = createMetadataDecoy({
      canaries: { accessKeyId: 'AKIADIVERTED', secretAccessKey: 's', token: 't', imdsToken: 'i' },
      roleName: 'sandcheck-role',
      log,
    });
    const handle = await startCanaryTcp({
      host: '127.0.0.1',
      port: 0,
      banner: BANNER,
      log,
      divert: new Map([['127.0.0.1', (socket: Socket) => metadata.acceptConnection(socket)]]),
    });
    handles.push(handle);
    const port = handle.listeners[0]?.port ?? 0;
    try {
      const { reply } = await exchange(
        '127.0.0.1',
        port,
        'GET /latest/meta-data/iam/security-credentials/sandcheck-role HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(reply).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(reply).toContain('"AccessKeyId": "AKIADIVERTED"');
      const event = await log.waitFor(() => true);
      expect(event).toMatchObject({ service: 'metadata', local: { address: '127.0.0.1', port } });
      expect(log.events().some((e) => e.service === 'canary-http')).toBe(false);
    } finally {
      await metadata.close();
    }
  });

  it('close() ends open connections, logs them, and frees the port', async () => {
    const log = new DecoyLog();
    const { handle, port } = await canary(log, '127.0.0.1', { idleTimeoutMs: 5000 });
    const client = connect({ host: '127.0.0.1', port });
    const clientClosed = new Promise<void>((resolve) => client.on('close', () => resolve()));
    client.on('error', () => undefined);
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    client.write('partial');
    await new Promise((r) => setTimeout(r, 50));
    await handle.close();
    await clientClosed;
    const event = await log.waitFor(() => true);
    expect(event.detail?.['endedBy']).toBe('shutdown');
    expect(Buffer.from(event.payloadBase64, 'base64').toString()).toBe('partial');
    await expect(exchange('127.0.0.1', port, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('catch-all UDP', () => {
  function sendAndMaybeReceive(host: string, port: number, data: Buffer, waitMs: number): Promise<string | undefined> {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.close();
        resolve(undefined);
      }, waitMs);
      socket.once('message', (m: Buffer) => {
        clearTimeout(timer);
        socket.close();
        resolve(m.toString());
      });
      socket.send(data, port, host, (error) => {
        if (error) reject(error);
      });
    });
  }

  it('logs every datagram and stays silent by default', async () => {
    const log = new DecoyLog();
    const handle = await startCatchAllUdp({ host: '127.0.0.1', port: 0, log });
    handles.push(handle);
    const port = handle.listeners[0]?.port ?? 0;
    expect(handle.listeners).toEqual([{ service: 'catch-all-udp', proto: 'udp', host: '127.0.0.1', port }]);
    const reply = await sendAndMaybeReceive('127.0.0.1', port, Buffer.from('sc-udp-ping\x00'), 200);
    expect(reply).toBeUndefined();
    const event = await log.waitFor(() => true);
    expect(DecoyEventSchema.parse(event)).toEqual(event);
    expect(event).toMatchObject({
      service: 'catch-all-udp',
      proto: 'udp',
      local: { address: '127.0.0.1', port },
      peer: { address: '127.0.0.1' },
      summary: 'UDP 12 bytes: sc-udp-ping.',
    });
    expect(Buffer.from(event.payloadBase64, 'base64').toString()).toBe('sc-udp-ping\x00');
  });

  it('answers with the banner when given one, on ::1, and caps the payload', async () => {
    const log = new DecoyLog();
    const handle = await startCatchAllUdp({ host: '::1', port: 0, log, banner: BANNER });
    handles.push(handle);
    const port = handle.listeners[0]?.port ?? 0;
    const reply = await sendAndMaybeReceive('::1', port, Buffer.alloc(6000, 0x42), 2000);
    expect(reply).toBe(`${BANNER}\n`);
    const event: DecoyEvent = await log.waitFor(() => true);
    expect(event.local.address).toBe('::1');
    expect(Buffer.from(event.payloadBase64, 'base64')).toHaveLength(MAX_PAYLOAD_BYTES);
    expect(event.detail).toMatchObject({ bytes: '6000', payloadTruncated: 'true' });
  });
});

describe('tlsClientHelloSni', () => {
  it('returns undefined for truncated or non-TLS input instead of throwing', () => {
    expect(tlsClientHelloSni(Buffer.from('GET / HTTP/1.1\r\n'))).toBeUndefined();
    expect(tlsClientHelloSni(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00]))).toBeUndefined();
    expect(tlsClientHelloSni(Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))).toBeUndefined();
  });
});
