import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DecoyEventSchema, DecoyLog, type DecoyEvent } from '../../lab/decoys/decoy-log.js';
import { answerDnsQuery, type DnsAnswers } from '../../lab/decoys/dns-answer.js';
import { startDnsDecoy } from '../../lab/decoys/dns.js';
import { LabConfigError } from '../../lab/decoys/errors.js';
import type { DecoyHandle } from '../../lab/decoys/listen.js';

// Answer data only: the tests never connect to these addresses.
const answers: DnsAnswers = {
  a: '192.0.2.10',
  aaaa: '2001:db8::10',
  overrides: { 'metadata.google.internal.': { a: '169.254.169.254' } },
};

function query(name: string, type: dnsPacket.RecordType, id = 4242): Buffer {
  return dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
  });
}

function udpExchange(host: string, port: number, packet: Buffer, timeoutMs = 3000): Promise<Buffer> {
  const socket = createSocket(isIPv6(host) ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no UDP answer'));
    }, timeoutMs);
    socket.once('message', (message: Buffer) => {
      clearTimeout(timer);
      socket.close();
      resolve(message);
    });
    socket.send(packet, port, host);
  });
}

function udpSend(host: string, port: number, packet: Buffer): Promise<void> {
  const socket = createSocket(isIPv6(host) ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    socket.send(packet, port, host, (error) => {
      socket.close();
      if (error) reject(error);
      else resolve();
    });
  });
}

const RCODE_NOERROR = 0;
const RCODE_NOTIMP = 4;
/** The header's RCODE (dns-packet's typings do not declare its decoded `rcode`). */
function rcodeOf(message: Buffer): number {
  return (message[3] ?? 0xff) & 0x0f;
}

function frame(message: Buffer): Buffer {
  const out = Buffer.alloc(2 + message.length);
  out.writeUInt16BE(message.length, 0);
  message.copy(out, 2);
  return out;
}

/** Writes `chunks` one by one, then reads `expected` framed responses. */
function tcpExchange(host: string, port: number, chunks: Buffer[], expected: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => {
      let i = 0;
      const writeNext = (): void => {
        const chunk = chunks[i++];
        if (chunk === undefined) return;
        socket.write(chunk);
        setTimeout(writeNext, 20);
      };
      writeNext();
    });
    let buffer = Buffer.alloc(0);
    const responses: Buffer[] = [];
    socket.setTimeout(3000, () => socket.destroy(new Error('TCP DNS timed out')));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 2 && buffer.length >= 2 + buffer.readUInt16BE(0)) {
        const length = buffer.readUInt16BE(0);
        responses.push(buffer.subarray(2, 2 + length));
        buffer = buffer.subarray(2 + length);
      }
      if (responses.length >= expected) socket.end();
    });
    socket.on('close', () => (responses.length >= expected ? resolve(responses) : reject(new Error('closed early'))));
    socket.on('error', reject);
  });
}

function dnsEvents(log: DecoyLog): DecoyEvent[] {
  return log.events().filter((e) => e.service === 'dns');
}

async function waitForCount(log: DecoyLog, count: number): Promise<DecoyEvent[]> {
  const deadline = Date.now() + 5000;
  while (dnsEvents(log).length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} dns events, got ${dnsEvents(log).length}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return dnsEvents(log);
}

describe('DNS decoy on 127.0.0.1', () => {
  let log: DecoyLog;
  let decoy: DecoyHandle;
  let port: number;

  beforeEach(async () => {
    log = new DecoyLog();
    decoy = await startDnsDecoy({ host: '127.0.0.1', port: 0, answers, log });
    port = decoy.listeners[0]?.port ?? 0;
  });
  afterEach(async () => {
    await decoy.close();
  });

  it('listens on UDP and TCP on the same port', () => {
    expect(port).toBeGreaterThan(0);
    expect(decoy.listeners).toEqual([
      { service: 'dns', proto: 'udp', host: '127.0.0.1', port },
      { service: 'dns', proto: 'tcp', host: '127.0.0.1', port },
    ]);
  });

  it('answers A over UDP for any name and logs the canary label', async () => {
    const raw = await udpExchange('127.0.0.1', port, query('sc-abc123.exfil.example', 'A', 777));
    const response = dnsPacket.decode(raw);
    expect(response.id).toBe(777);
    expect(response.flag_qr).toBe(true);
    expect(response.flag_aa).toBe(true);
    expect(response.flag_rd).toBe(true);
    expect(response.questions).toEqual([{ name: 'sc-abc123.exfil.example', type: 'A', class: 'IN' }]);
    expect(response.answers).toMatchObject([{ type: 'A', name: 'sc-abc123.exfil.example', data: '192.0.2.10' }]);

    const [event] = await waitForCount(log, 1);
    expect(DecoyEventSchema.parse(event)).toEqual(event);
    expect(event).toMatchObject({
      service: 'dns',
      proto: 'udp',
      local: { address: '127.0.0.1', port },
      peer: { address: '127.0.0.1' },
      summary: 'A? sc-abc123.exfil.example.',
    });
    expect(event?.detail).toMatchObject({
      qname: 'sc-abc123.exfil.example',
      qtype: 'A',
      rcode: 'NOERROR',
      answers: '192.0.2.10',
      id: '777',
    });
    expect(event?.detail?.['localAddressKnown']).toBeUndefined();
    expect(Buffer.from(event?.payloadBase64 ?? '', 'base64')).toEqual(query('sc-abc123.exfil.example', 'A', 777));
  });

  it('answers AAAA, applies overrides, and gives other types an empty NOERROR', async () => {
    const aaaa = dnsPacket.decode(await udpExchange('127.0.0.1', port, query('anything.example', 'AAAA')));
    expect(aaaa.answers).toMatchObject([{ type: 'AAAA', data: '2001:db8::10' }]);

    const pinned = dnsPacket.decode(await udpExchange('127.0.0.1', port, query('Metadata.Google.Internal', 'A')));
    expect(pinned.answers).toMatchObject([{ type: 'A', data: '169.254.169.254' }]);
    const pinnedV6Raw = await udpExchange('127.0.0.1', port, query('metadata.google.internal', 'AAAA'));
    expect(dnsPacket.decode(pinnedV6Raw).answers).toEqual([]);
    expect(rcodeOf(pinnedV6Raw)).toBe(RCODE_NOERROR);

    const txtRaw = await udpExchange('127.0.0.1', port, query('sc-txt.exfil.example', 'TXT'));
    expect(rcodeOf(txtRaw)).toBe(RCODE_NOERROR);
    expect(dnsPacket.decode(txtRaw).answers).toEqual([]);

    const events = await waitForCount(log, 4);
    expect(events.map((e) => e.summary)).toEqual([
      'AAAA? anything.example.',
      'A? Metadata.Google.Internal.',
      'AAAA? metadata.google.internal.',
      'TXT? sc-txt.exfil.example.',
    ]);
  });

  it('answers over TCP with length framing, pipelined and split across writes', async () => {
    const first = frame(query('sc-tcp1.exfil.example', 'A', 1));
    const second = frame(query('sc-tcp2.exfil.example', 'AAAA', 2));
    const joined = Buffer.concat([first, second]);
    // Both messages in pieces: the split falls inside the length prefix and inside a name.
    const responses = await tcpExchange('127.0.0.1', port, [joined.subarray(0, 1), joined.subarray(1, 20), joined.subarray(20)], 2);
    const decoded = responses.map((r) => dnsPacket.decode(r));
    expect(decoded.map((d) => d.id)).toEqual([1, 2]);
    expect(decoded[0]?.answers).toMatchObject([{ type: 'A', name: 'sc-tcp1.exfil.example', data: '192.0.2.10' }]);
    expect(decoded[1]?.answers).toMatchObject([{ type: 'AAAA', name: 'sc-tcp2.exfil.example', data: '2001:db8::10' }]);

    const events = await waitForCount(log, 2);
    expect(events.map((e) => [e.proto, e.summary, e.detail?.['qname']])).toEqual([
      ['tcp', 'A? sc-tcp1.exfil.example.', 'sc-tcp1.exfil.example'],
      ['tcp', 'AAAA? sc-tcp2.exfil.example.', 'sc-tcp2.exfil.example'],
    ]);
    expect(events[0]?.local).toEqual({ address: '127.0.0.1', port });
    expect(events[0]?.peer.port).toBe(events[1]?.peer.port);
  });

  it('logs a malformed UDP packet, sends nothing back, and keeps serving', async () => {
    const garbage = Buffer.from([0x12, 0x34, 0x01, 0x00, 0x00, 0x05, 0xff]);
    await udpSend('127.0.0.1', port, garbage);
    const malformed = await log.waitFor((e) => e.detail?.['malformed'] === 'true');
    expect(malformed.summary).toBe('malformed DNS packet (7 bytes)');
    expect(Buffer.from(malformed.payloadBase64, 'base64')).toEqual(garbage);
    await expect(udpExchange('127.0.0.1', port, garbage, 300)).rejects.toThrow('no UDP answer');

    const after = dnsPacket.decode(await udpExchange('127.0.0.1', port, query('still.alive.example', 'A')));
    expect(after.answers).toHaveLength(1);
  });

  it('logs a malformed TCP message and an unfinished frame without crashing', async () => {
    const responses = await tcpExchange('127.0.0.1', port, [frame(Buffer.from('not dns at all')), frame(query('sc-after.exfil.example', 'A', 9))], 1);
    expect(dnsPacket.decode(responses[0] ?? Buffer.alloc(0)).id).toBe(9);

    await new Promise<void>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => socket.end(Buffer.from([0x00, 0x40, 0x01, 0x02])));
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    const events = await waitForCount(log, 3);
    expect(events.map((e) => e.summary)).toEqual(['malformed DNS packet (14 bytes)', 'A? sc-after.exfil.example.', 'incomplete DNS/TCP frame (4 bytes)']);
  });

  it('closes both sockets on close()', async () => {
    await decoy.close();
    await expect(tcpExchange('127.0.0.1', port, [frame(query('x.example', 'A'))], 1)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    // The UDP port is free again.
    const probe = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.bind({ address: '127.0.0.1', port, exclusive: true }, () => resolve());
    });
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });
});

describe('DNS decoy on ::1', () => {
  it('answers over UDP and TCP and logs the IPv6 addresses', async () => {
    const log = new DecoyLog();
    const decoy = await startDnsDecoy({ host: '::1', port: 0, answers, log });
    try {
      const port = decoy.listeners[0]?.port ?? 0;
      const udp = dnsPacket.decode(await udpExchange('::1', port, query('sc-v6.exfil.example', 'A')));
      expect(udp.answers).toMatchObject([{ data: '192.0.2.10' }]);
      const [tcp] = await tcpExchange('::1', port, [frame(query('sc-v6tcp.exfil.example', 'AAAA'))], 1);
      expect(dnsPacket.decode(tcp ?? Buffer.alloc(0)).answers).toMatchObject([{ data: '2001:db8::10' }]);
      const events = await waitForCount(log, 2);
      expect(events.map((e) => [e.proto, e.local.address, e.peer.address])).toEqual([
        ['udp', '::1', '::1'],
        ['tcp', '::1', '::1'],
      ]);
    } finally {
      await decoy.close();
    }
  });
});

describe('answerDnsQuery', () => {
  it('ignores responses and refuses non-QUERY opcodes', () => {
    const response = dnsPacket.encode({ type: 'response', id: 5, questions: [{ type: 'A', name: 'r.example' }] });
    expect(answerDnsQuery(response, answers)).toMatchObject({ kind: 'ignored', questions: [{ name: 'r.example' }] });

    const update = query('u.example', 'A');
    update[2] = (update[2] ?? 0) | (5 << 3); // opcode UPDATE
    const outcome = answerDnsQuery(update, answers);
    expect(outcome).toMatchObject({ kind: 'answered', rcode: 'NOTIMP', answers: [] });
    if (outcome.kind === 'answered') expect(rcodeOf(outcome.response)).toBe(RCODE_NOTIMP);
  });

  it('answers ANY with both families and FORMERR without a question', () => {
    const any = answerDnsQuery(dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'ANY' as dnsPacket.RecordType, name: 'a.example' }] }), answers);
    expect(any).toMatchObject({ kind: 'answered', answers: ['192.0.2.10', '2001:db8::10'] });
    const empty = answerDnsQuery(dnsPacket.encode({ type: 'query', id: 2, questions: [] }), answers);
    expect(empty).toMatchObject({ kind: 'answered', rcode: 'FORMERR' });
  });

  it('reports truncated input as malformed', () => {
    expect(answerDnsQuery(Buffer.alloc(0), answers).kind).toBe('malformed');
    expect(answerDnsQuery(query('t.example', 'A').subarray(0, 20), answers).kind).toBe('malformed');
  });

  it('rejects bad answer addresses before binding', async () => {
    await expect(startDnsDecoy({ host: '127.0.0.1', port: 0, answers: { a: 'not-an-ip', aaaa: '::1' }, log: new DecoyLog() })).rejects.toBeInstanceOf(
      LabConfigError,
    );
  });
});
