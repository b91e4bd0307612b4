import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { startCanaryTcp, startCatchAllUdp } from '../../lab/decoys/canary-host.js';
import { DecoyEventSchema, DecoyLog, MAX_PAYLOAD_BYTES } from '../../lab/decoys/decoy-log.js';
import { startDnsDecoy } from '../../lab/decoys/dns.js';
import type { DecoyHandle } from '../../lab/decoys/listen.js';
import { startMetadataDecoy } from '../../lab/decoys/metadata.js';

// What the canary scan reads in decoy logs: HTTP bodies, TCP streams, UDP datagrams and DNS names, each bounded.

const handles: DecoyHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.close()));
});

function send(port: number, chunks: (string | Buffer)[], gapMs = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, async () => {
      for (const c of chunks) {
        socket.write(c);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    });
    socket.setTimeout(8000, () => socket.destroy(new Error('timed out')));
    socket.on('data', () => undefined);
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

const body64 = (text: string): string => Buffer.from(text).toString('base64');

describe('decoy events carry what was sent', () => {
  it('an HTTP request body on a canary host, also when it arrives after the head', async () => {
    const log = new DecoyLog();
    const handle = await startCanaryTcp({ host: '127.0.0.1', port: 0, banner: 'b', log, idleTimeoutMs: 300 });
    handles.push(handle);
    const port = handle.listeners[0]?.port ?? 0;
    const body = 'secret=SCNRYBODY0123456789';
    await send(port, [`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`, body], 100);
    const event = DecoyEventSchema.parse(await log.waitFor((e) => e.summary.startsWith('POST')));
    expect(event.bodyBase64).toBe(body64(body));
    expect(event.detail?.['endedBy']).toBe('http-body');
  });

  it('keeps the first 4 KiB of a long body, after a head of any size up to 4 KiB', async () => {
    const log = new DecoyLog();
    const handle = await startCanaryTcp({ host: '127.0.0.1', port: 0, banner: 'b', log, idleTimeoutMs: 300 });
    handles.push(handle);
    const body = 'A'.repeat(10_000);
    const head = `POST / HTTP/1.1\r\nX-Pad: ${'p'.repeat(3000)}\r\nContent-Length: ${body.length}\r\n\r\n`;
    await send(handle.listeners[0]?.port ?? 0, [head + body]);
    const event = DecoyEventSchema.parse(await log.waitFor((e) => e.summary.startsWith('POST')));
    expect(Buffer.from(event.bodyBase64 ?? '', 'base64').length).toBe(MAX_PAYLOAD_BYTES);
    expect(event.detail?.['bodyTruncated']).toBe('true');
  });

  it('a metadata request body', async () => {
    const log = new DecoyLog();
    const canaries = { accessKeyId: 'SCNRYA', secretAccessKey: 'SCNRYS', token: 'SCNRYT', imdsToken: 'SCNRYV' };
    const handle = await startMetadataDecoy({ host: '127.0.0.1', port: 0, canaries, roleName: 'r', log });
    handles.push(handle);
    await send(handle.listeners[0]?.port ?? 0, ['PUT /latest/api/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 11\r\n\r\nSCNRYPUT123']);
    const event = await log.waitFor((e) => e.summary.startsWith('PUT'));
    expect(event.bodyBase64).toBe(body64('SCNRYPUT123'));
  });

  it('a UDP datagram, and every question name of a DNS message', async () => {
    const log = new DecoyLog();
    const udp = await startCatchAllUdp({ host: '127.0.0.1', port: 0, log });
    const dns = await startDnsDecoy({ host: '127.0.0.1', port: 0, answers: { a: '192.0.2.10', aaaa: '2001:db8::10' }, log });
    handles.push(udp, dns);
    const query = dnsPacket.encode({
      type: 'query',
      id: 1,
      questions: [
        { type: 'A', name: 'scnry01.part.exfil.example' },
        { type: 'AAAA', name: 'scnry02.part.exfil.example' },
      ],
    });
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.send('SCNRYUDP42', udp.listeners[0]?.port ?? 0, '127.0.0.1', () => r()));
    await new Promise<void>((r) => socket.send(query, dns.listeners[0]?.port ?? 0, '127.0.0.1', () => r()));
    const datagram = await log.waitFor((e) => e.service === 'catch-all-udp');
    const question = DecoyEventSchema.parse(await log.waitFor((e) => e.service === 'dns'));
    socket.close();
    expect(datagram.payloadBase64).toBe(body64('SCNRYUDP42'));
    expect(question.dnsNames).toEqual(['scnry01.part.exfil.example', 'scnry02.part.exfil.example']);
  });
});
