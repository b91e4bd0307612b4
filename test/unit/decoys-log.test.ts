import { describe, expect, it } from 'vitest';
import { buildDecoyEvent, canonicalIp, isWildcardHost, mappedIPv4, matchableIp, oneLine } from '../../lab/decoys/decoy-event.js';
import { DecoyEventSchema, DecoyLog, type DecoyEvent } from '../../lab/decoys/decoy-log.js';
import { DecoyWaitTimeoutError } from '../../lab/decoys/errors.js';

function sample(n: number): DecoyEvent {
  return buildDecoyEvent({
    service: 'catch-all-udp',
    proto: 'udp',
    local: { address: '127.0.0.1', port: 9 },
    peer: { address: '127.0.0.1', port: 40000 + n },
    summary: `event ${n}`,
    payload: Buffer.from([n]),
  });
}

describe('address helpers', () => {
  it('unwraps IPv4-mapped IPv6 in dotted and hex form', () => {
    expect(mappedIPv4('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(mappedIPv4('::FFFF:169.254.169.254')).toBe('169.254.169.254');
    expect(mappedIPv4('::ffff:a9fe:a9fe')).toBe('169.254.169.254');
    expect(mappedIPv4('::1')).toBeUndefined();
    expect(mappedIPv4('1.2.3.4')).toBeUndefined();
  });

  it('canonicalises IPv6 and recognises wildcards', () => {
    expect(canonicalIp('FD00:0EC2:0000:0000:0000:0000:0000:0254')).toBe('fd00:ec2::254');
    expect(matchableIp('::ffff:100.100.100.200')).toBe('100.100.100.200');
    expect(isWildcardHost('0.0.0.0')).toBe(true);
    expect(isWildcardHost('0:0::0')).toBe(true);
    expect(isWildcardHost('::1')).toBe(false);
  });

  it('keeps the dialled mapped address and adds its IPv4 form to detail', () => {
    const event = buildDecoyEvent({
      service: 'canary-http',
      proto: 'tcp',
      local: { address: '::ffff:192.0.2.10', port: 80 },
      peer: { address: '::ffff:10.1.2.3', port: 5555 },
      summary: 'GET /\r\nInjected: line',
      payload: Buffer.alloc(5000),
      detail: { method: 'GET' },
    });
    expect(DecoyEventSchema.parse(event)).toEqual(event);
    expect(event.local.address).toBe('::ffff:192.0.2.10');
    expect(event.detail).toEqual({
      method: 'GET',
      localIPv4: '192.0.2.10',
      peerIPv4: '10.1.2.3',
      payloadTruncated: 'true',
    });
    expect(event.summary).toBe('GET /\\x0d\\x0aInjected: line');
    expect(Buffer.from(event.payloadBase64, 'base64')).toHaveLength(4096);
  });

  it('caps one-line text', () => {
    expect(oneLine('x'.repeat(500))).toHaveLength(200);
  });
});

describe('DecoyLog', () => {
  it('stores the first maxEvents, counts the rest, and still notifies subscribers', () => {
    const log = new DecoyLog({ maxEvents: 3 });
    const seen: string[] = [];
    const unsubscribe = log.on('event', (e) => seen.push(e.summary));
    for (let i = 0; i < 5; i += 1) log.record(sample(i));
    expect(log.events().map((e) => e.summary)).toEqual(['event 0', 'event 1', 'event 2']);
    expect(log.dropped).toBe(2);
    expect(seen).toHaveLength(5);
    unsubscribe();
    log.record(sample(5));
    expect(seen).toHaveLength(5);
    expect(log.dropped).toBe(3);
  });

  it('returns a copy from events()', () => {
    const log = new DecoyLog();
    log.record(sample(1));
    log.events().pop();
    expect(log.events()).toHaveLength(1);
  });

  it('isolates a throwing subscriber', () => {
    const errors: unknown[] = [];
    const log = new DecoyLog({ onListenerError: (e) => errors.push(e) });
    const seen: number[] = [];
    log.on('event', () => {
      throw new Error('boom');
    });
    log.on('event', (e) => seen.push(e.peer.port));
    log.record(sample(7));
    expect(seen).toEqual([40007]);
    expect(errors).toHaveLength(1);
    expect(log.events()).toHaveLength(1);
  });

  it('waitFor resolves on a stored or future event and times out with a typed error', async () => {
    const log = new DecoyLog();
    log.record(sample(1));
    await expect(log.waitFor((e) => e.summary === 'event 1')).resolves.toMatchObject({ summary: 'event 1' });
    const pending = log.waitFor((e) => e.summary === 'event 2', 1000);
    log.record(sample(2));
    await expect(pending).resolves.toMatchObject({ summary: 'event 2' });
    await expect(log.waitFor(() => false, 20)).rejects.toBeInstanceOf(DecoyWaitTimeoutError);
  });

  it('rejects a negative bound', () => {
    expect(() => new DecoyLog({ maxEvents: -1 })).toThrow(RangeError);
  });
});
