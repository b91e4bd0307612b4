import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { makeCanaries, type Canary } from '../../lab/canaries.js';
import { base32, canaryPatterns, CanaryScanner, scanBytes, type CanaryForm } from '../../lab/canary-forms.js';
import { scanDecoyEvents, scanDnsNames, scanEach, scanJoined } from '../../lab/canary-scan.js';
import { buildDecoyEvent, endpoint } from '../../lab/decoys/decoy-event.js';
import type { DecoyEvent } from '../../lab/decoys/decoy-log.js';

const canaries: Canary[] = makeCanaries().all;
const target = canaries[1]!; // env:AWS_SECRET_ACCESS_KEY
const value = target.value;
const raw = Buffer.from(value);
const noise = (n: number): Buffer =>
  Buffer.from(
    randomBytes(4 * n + 64)
      .toString('base64')
      .replace(/[^a-z]/g, '')
      .slice(0, n),
  );

/** How each form is produced by an attacker: a whole-value encoding, preceded by `lead` other bytes. */
const encodings: { form: CanaryForm; encode: (lead: Buffer) => Buffer }[] = [
  { form: 'raw', encode: () => raw },
  { form: 'lower', encode: () => Buffer.from(value.toLowerCase()) },
  { form: 'upper', encode: () => Buffer.from(value.toUpperCase()) },
  { form: 'mixed-case', encode: () => Buffer.from([...value].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join('')) },
  { form: 'reversed', encode: () => Buffer.from([...value].reverse().join('')) },
  { form: 'hex', encode: () => Buffer.from(raw.toString('hex')) },
  { form: 'hex', encode: () => Buffer.from(raw.toString('hex').toUpperCase()) },
  { form: 'utf16le', encode: () => Buffer.from(value, 'utf16le') },
  { form: 'utf16be', encode: () => Buffer.from(value, 'utf16le').swap16() },
  { form: 'url-encoded', encode: () => Buffer.from([...raw].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')) },
  { form: 'url-encoded', encode: () => Buffer.from([...raw].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')) },
  ...[0, 1, 2].flatMap((k) => [
    { form: 'base64' as const, encode: (lead: Buffer) => Buffer.from(Buffer.concat([lead.subarray(0, k), raw, Buffer.from('?>~')]).toString('base64')) },
  ]),
  ...[0, 1, 2, 3, 4].flatMap((k) => [
    { form: 'base32' as const, encode: (lead: Buffer) => Buffer.from(base32(Buffer.concat([lead.subarray(0, k), raw, Buffer.from('xyz')]))) },
    { form: 'base32' as const, encode: (lead: Buffer) => Buffer.from(base32(Buffer.concat([lead.subarray(0, k), raw])).toLowerCase()) },
  ]),
];

describe('canaryPatterns', () => {
  it('names every form and keeps no encoding shorter than the minimum', () => {
    const patterns = canaryPatterns(value);
    const forms = new Set(patterns.map((p) => p.form));
    for (const f of ['raw', 'lower', 'upper', 'reversed', 'hex', 'base64', 'base32', 'utf16le', 'utf16be', 'url-encoded'] as const) expect(forms).toContain(f);
    expect(patterns.filter((p) => p.form === 'base64')).toHaveLength(3);
    expect(patterns.filter((p) => p.form === 'base32')).toHaveLength(5);
    expect(Math.min(...patterns.map((p) => p.bytes.length))).toBeGreaterThanOrEqual(value.length);
  });

  it('base32 matches RFC 4648', () => {
    expect(base32(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32(Buffer.from('f'))).toBe('MY');
  });
});

describe('scanBytes', () => {
  it.each(encodings.map((e, i) => [i, e.form, e] as const))('finds encoding #%i as %s, whatever surrounds it', (_i, form, e) => {
    const lead = randomBytes(4);
    const buf = Buffer.concat([noise(37), e.encode(lead), noise(41)]);
    const hits = scanBytes(buf, canaries);
    expect(hits.map((h) => [h.label, h.form])).toContainEqual([target.label, form]);
    expect(hits.every((h) => h.value === value)).toBe(true);
  });

  it('names base64url where it differs from base64, in all three alignments', () => {
    const odd: Canary = { label: 'test:odd', value: `SCNRY>>>???~~~${randomBytes(12).toString('hex')}` };
    const oddRaw = Buffer.from(odd.value);
    for (const k of [0, 1, 2]) {
      const url = Buffer.concat([randomBytes(k), oddRaw, Buffer.from('!')]).toString('base64url');
      expect(url).toMatch(/[-_]/);
      expect(
        scanBytes(Buffer.from(`q=${url}&`), [odd]).map((h) => h.form),
        `alignment ${k}`,
      ).toEqual(['base64url']);
    }
  });

  it('reports nothing for random bytes, random text, a sibling canary or a cut encoding', () => {
    const sibling = `${value.slice(0, -4)}${value.endsWith('0000') ? 'ffff' : '0000'}`;
    const b64 = Buffer.from(raw.toString('base64').slice(0, -8));
    const inputs = [
      randomBytes(4 * 1024 * 1024),
      Buffer.from(randomBytes(1024 * 1024).toString('base64')),
      Buffer.from(randomBytes(1024 * 1024).toString('hex')),
      Buffer.from(base32(randomBytes(1024 * 1024))),
      Buffer.from(`${sibling} ${Buffer.from(sibling).toString('base64')} ${Buffer.from(sibling).toString('hex')}`),
      b64,
      Buffer.from(value.slice(0, -1)),
    ];
    for (const input of inputs) expect(scanBytes(input, canaries)).toEqual([]);
  });

  it('reports each (canary, form) once with the offset of its first occurrence', () => {
    const hex = raw.toString('hex');
    const hits = scanBytes(Buffer.from(`..${hex}..${hex}..${value}`), canaries);
    expect(hits.map((h) => [h.form, h.offset])).toEqual([
      ['hex', 2],
      ['raw', 6 + 2 * hex.length],
    ]);
  });
});

describe('CanaryScanner', () => {
  it('finds every form split at every chunk size, with absolute offsets', () => {
    const body = Buffer.concat([noise(100), Buffer.from(raw.toString('base64')), noise(3), Buffer.from(value, 'utf16le'), noise(5)]);
    for (const size of [1, 2, 3, 7, 31, 32, 33, 64, 107, 108, 109, 4096]) {
      const scanner = new CanaryScanner(canaries);
      for (let i = 0; i < body.length; i += size) scanner.write(body.subarray(i, i + size));
      const hits = scanner.hits().map((h) => [h.form, h.offset]);
      expect(hits, `chunk size ${size}`).toContainEqual(['base64', 100]);
      expect(hits, `chunk size ${size}`).toContainEqual(['utf16le', 100 + raw.toString('base64').length + 3]);
      expect(scanner.bytes).toBe(body.length);
    }
  });

  it('finds a hex value straddling a 64 KiB chunk boundary deep in a 16 MiB stream', () => {
    const scanner = new CanaryScanner(canaries);
    const hex = Buffer.from(raw.toString('hex'));
    const chunk = randomBytes(64 * 1024);
    for (let i = 0; i < 128; i++) scanner.write(chunk);
    const seam = Buffer.concat([randomBytes(64 * 1024 - 20), hex, randomBytes(64 * 1024 - hex.length + 20)]);
    scanner.write(seam.subarray(0, 64 * 1024));
    scanner.write(seam.subarray(64 * 1024));
    for (let i = 0; i < 126; i++) scanner.write(chunk);
    expect(scanner.hits()).toEqual([{ label: target.label, value, form: 'hex', offset: 128 * 64 * 1024 + 64 * 1024 - 20 }]);
  });
});

describe('CanaryScanner across lines', () => {
  it('finds a value broken by LF, CRLF or CR deep in a stream, and only when asked to', () => {
    const hex = raw.toString('hex');
    const wrapped = `${hex.slice(0, 20)}\n${hex.slice(20, 40)}\r\n${hex.slice(40, 60)}\r${hex.slice(60)}\n`;
    const stream = Buffer.concat([randomBytes(3 * 65536 - 30), Buffer.from(wrapped), Buffer.from('x'.repeat(65536))]);
    for (const acrossLines of [false, true]) {
      const scanner = new CanaryScanner(canaries, { acrossLines });
      for (let i = 0; i < stream.length; i += 65536) scanner.write(stream.subarray(i, i + 65536));
      const hits = scanner.hits().filter((h) => h.value === value);
      expect(hits.map((h) => [h.form, h.acrossLines])).toEqual(acrossLines ? [['hex', true]] : []);
    }
  });

  it('does not repeat as across-lines what the raw stream already shows', () => {
    const hits = scanBytes(Buffer.from(`${value}\n${value.slice(0, 9)}\n${value.slice(9)}`), canaries, { acrossLines: true });
    expect(hits.map((h) => [h.form, h.acrossLines])).toEqual([['raw', undefined]]);
  });
});

describe('scanJoined', () => {
  const half = Math.floor(value.length / 2);
  const a = value.slice(0, half);
  const b = value.slice(half);

  it('finds a value split between stdout and stderr, in either order, or broken by spaces', () => {
    expect(scanJoined([Buffer.from(`x ${a}`), Buffer.from(`${b} y`)], canaries).map((h) => h.form)).toEqual(['raw']);
    expect(scanJoined([Buffer.from(`${b}\n`), Buffer.from(`${a}`)], canaries).map((h) => h.form)).toEqual(['raw']);
    const spaced = raw.toString('base64').replace(/(.{8})/g, '$1 \t');
    expect(scanJoined([Buffer.from(spaced)], canaries).map((h) => [h.label, h.form])).toEqual([[target.label, 'base64']]);
  });

  it('leaves to the plain scan what one part holds whole, and finds nothing in unrelated parts', () => {
    expect(scanJoined([Buffer.from(value), Buffer.from('other')], canaries)).toEqual([]);
    expect(scanJoined([Buffer.from(`${a}\n${b}`), Buffer.from('other')], canaries)).toEqual([]);
    expect(scanJoined([Buffer.from(a), Buffer.from('zz'), Buffer.from(b.slice(1))], canaries)).toEqual([]);
  });
});

describe('scanEach', () => {
  it('names the buffer each hit came from', () => {
    const items = [
      { where: 'artifact:out/result.json', bytes: Buffer.from(`{"k":"${base32(raw)}"}`) },
      { where: 'workspace:.cache/x', bytes: Buffer.from('nothing here') },
      { where: 'decoy:daemon-socket', bytes: Buffer.from(`POST /containers/create HTTP/1.1\r\n\r\n${value.slice(0, 10)}\n${value.slice(10)}`) },
    ];
    expect(scanEach(items, canaries).map((h) => [h.where, h.form, h.acrossLines])).toEqual([
      ['artifact:out/result.json', 'base32', undefined],
      ['decoy:daemon-socket', 'raw', true],
    ]);
  });
});

describe('scanDnsNames', () => {
  const hex = raw.toString('hex');
  const b32 = base32(raw).toLowerCase();

  it('finds hex, base32 and base64url split over the labels of one name, in any case', () => {
    const hits = scanDnsNames(
      [
        `${hex.slice(0, 40)}.${hex.slice(40)}.x.exfil.example.`,
        `${b32.slice(0, 30).toUpperCase()}.${b32.slice(30)}.x.exfil.example`,
        `${raw.toString('base64url').slice(0, 30).toLowerCase()}.${raw.toString('base64url').slice(30)}.t.example`,
      ],
      canaries,
    );
    expect(hits.map((h) => [h.form, h.where])).toEqual([
      ['hex', 'dns query 0'],
      ['base32', 'dns query 1'],
      [expect.stringMatching(/^base64(url)?$/), 'dns query 2'], // named base64 when both encodings agree
    ]);
  });

  it('joins the data labels of successive queries of one zone, once per distinct name', () => {
    const parts = [hex.slice(0, 25), hex.slice(25, 50), hex.slice(50)];
    // getaddrinfo asks A then AAAA for each name; an unrelated lookup comes in between.
    const names = parts.flatMap((p) => [`${p}.x.exfil.example`, `${p}.x.exfil.example.`, 'pypi.org']);
    expect(scanDnsNames(names, canaries).map((h) => [h.form, h.where])).toEqual([['hex', 'dns queries joined exfil.example']]);
    expect(scanDnsNames(parts.map((p) => `${p}.x.exfil.example`).reverse(), canaries)).toEqual([]);
  });

  it('finds nothing in ordinary names', () => {
    expect(scanDnsNames(['www.example.com', 'a1b2c3d4e5f6.cdn.example.net', `${randomBytes(30).toString('hex')}.x.example`], canaries)).toEqual([]);
  });
});

describe('scanDecoyEvents', () => {
  const ev = (
    service: DecoyEvent['service'],
    proto: 'tcp' | 'udp',
    address: string,
    port: number,
    payload: Buffer,
    detail?: Record<string, string>,
  ): DecoyEvent =>
    buildDecoyEvent({
      service,
      proto,
      local: endpoint(address, port),
      peer: endpoint('10.0.0.2', 40000),
      summary: 's',
      payload,
      ...(detail ? { detail } : {}),
    });

  it('finds canaries in HTTP bodies and heads, TCP streams, UDP datagrams and DNS names, and says where', () => {
    const body = `data=${raw.toString('base64')}`;
    const events = [
      ev('canary-http', 'tcp', '203.0.113.10', 80, Buffer.from(`POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n${body}`)),
      ev(
        'canary-http',
        'tcp',
        '::ffff:198.51.100.7',
        8080,
        Buffer.from(`GET /?k=${value.slice(0, 5)}%${raw[5]!.toString(16)}${value.slice(6)} HTTP/1.1\r\n\r\n`),
        { localIPv4: '198.51.100.7' },
      ),
      ev('catch-all-tcp', 'tcp', '2001:db8::10', 9000, Buffer.from([...value].reverse().join(''))),
      ev('catch-all-udp', 'udp', '192.0.2.9', 5353, Buffer.from(value, 'utf16le')),
      ev('dns', 'udp', '192.0.2.53', 53, Buffer.alloc(12), {
        qname: `${raw.toString('hex').slice(0, 50)}.${raw.toString('hex').slice(50)}.x.exfil.example`,
        qtype: 'A',
      }),
    ];
    expect(scanDecoyEvents(events, canaries).map((h) => [h.form, h.where])).toEqual([
      ['base64', 'decoy:http body 203.0.113.10:80'],
      ['raw', 'decoy:http head 198.51.100.7:8080'],
      ['reversed', 'decoy:tcp stream [2001:db8::10]:9000'],
      ['utf16le', 'decoy:udp datagram 192.0.2.9:5353'],
      ['hex', 'decoy:dns query 192.0.2.53:53'],
    ]);
  });

  it('joins datagrams to one endpoint and names split over several DNS queries', () => {
    const hex = raw.toString('hex');
    const events = [
      ev('catch-all-udp', 'udp', '192.0.2.9', 9999, Buffer.from(value.slice(0, 10))),
      ev('catch-all-udp', 'udp', '192.0.2.8', 9999, Buffer.from('unrelated')),
      ev('catch-all-udp', 'udp', '192.0.2.9', 9999, Buffer.from(value.slice(10))),
      ev('dns', 'udp', '192.0.2.53', 53, Buffer.alloc(12), { qname: `${hex.slice(0, 36)}.x.exfil.example` }),
      ev('dns', 'udp', '192.0.2.53', 53, Buffer.alloc(12), { qname: `${hex.slice(36)}.x.exfil.example` }),
    ];
    expect(scanDecoyEvents(events, canaries).map((h) => [h.form, h.where])).toEqual([
      ['raw', 'decoy:udp datagrams joined 192.0.2.9:9999'],
      ['hex', 'decoy:dns queries joined exfil.example'],
    ]);
  });

  it('reads a separately recorded body (chunked, line-wrapped base64) and recorded DNS names', () => {
    const wrapped = Buffer.from(`junk${value}`)
      .toString('base64')
      .replace(/(.{20})/g, '$1\r\n');
    const chunked = `${(wrapped.length - 30).toString(16)}\r\n${wrapped.slice(0, -30)}\r\n1e\r\n${wrapped.slice(-30)}\r\n0\r\n\r\n`;
    const http: DecoyEvent & { bodyBase64?: string } = {
      ...ev('canary-http', 'tcp', '203.0.113.10', 80, Buffer.from('POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n')),
      bodyBase64: Buffer.from(chunked).toString('base64'),
    };
    const hex = raw.toString('hex');
    const dns: DecoyEvent & { dnsNames?: string[] } = {
      ...ev('dns', 'udp', '192.0.2.53', 53, Buffer.alloc(12)),
      dnsNames: [`${hex.slice(0, 40)}.${hex.slice(40)}.q.example`],
    };
    expect(scanDecoyEvents([http, dns], canaries).map((h) => [h.form, h.where, h.acrossLines])).toEqual([
      ['base64', 'decoy:http body 203.0.113.10:80', true],
      ['hex', 'decoy:dns query 192.0.2.53:53', undefined],
    ]);
  });

  it('finds nothing in ordinary traffic', () => {
    const events = [
      ev('canary-http', 'tcp', '203.0.113.10', 80, Buffer.from('GET / HTTP/1.1\r\nHost: example\r\n\r\n')),
      ev('catch-all-udp', 'udp', '192.0.2.9', 123, randomBytes(48)),
      ev('dns', 'udp', '192.0.2.53', 53, randomBytes(40), { qname: 'pypi.org' }),
    ];
    expect(scanDecoyEvents(events, canaries)).toEqual([]);
  });
});
