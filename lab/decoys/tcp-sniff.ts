/** Recognises what a client sent first on a raw TCP connection: HTTP, TLS, or anything else. */

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'CONNECT', 'TRACE', 'PRI'];

export function looksLikeHttp(data: Buffer): boolean {
  const start = data.subarray(0, 9).toString('latin1');
  return HTTP_METHODS.some((method) => start.startsWith(`${method} `));
}

export function httpHeadComplete(data: Buffer): boolean {
  return data.includes('\r\n\r\n') || data.includes('\n\n');
}

/** Offset of the first body byte once the head is complete, else undefined. */
export function httpBodyStart(data: Buffer): number | undefined {
  const m = /\r?\n\r?\n/.exec(data.toString('latin1'));
  return m === null ? undefined : m.index + m[0].length;
}

/**
 * Whether the request's body has arrived as far as a decoy keeps it (`keep` bytes): no body announced,
 * Content-Length reached, or a chunked body's last chunk seen.
 */
export function httpBodyComplete(data: Buffer, keep: number): boolean {
  const start = httpBodyStart(data);
  const head = parseHttpHead(data);
  if (start === undefined || head === undefined) return false;
  const body = data.length - start;
  if (body >= keep) return true;
  const length = head.headers['content-length'];
  if (length !== undefined && /^\d+$/.test(length)) return body >= Number(length);
  if (/chunked/i.test(head.headers['transfer-encoding'] ?? '')) return data.subarray(start).includes('0\r\n\r\n');
  return true;
}

export interface HttpHead {
  method: string;
  target: string;
  version: string | undefined;
  headers: Record<string, string>;
}

/** Parses the request line and whatever header lines arrived; undefined if not HTTP. */
export function parseHttpHead(data: Buffer): HttpHead | undefined {
  if (!looksLikeHttp(data)) return undefined;
  const text = data.toString('latin1');
  const headEnd = text.search(/\r?\n\r?\n/);
  const lines = (headEnd >= 0 ? text.slice(0, headEnd) : text).split(/\r?\n/);
  const [method = '', target = '', version] = (lines[0] ?? '').split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!(name in headers)) headers[name] = line.slice(colon + 1).trim();
  }
  return { method, target, version, headers };
}

export function looksLikeTls(data: Buffer): boolean {
  return data.length >= 2 && data[0] === 0x16 && data[1] === 0x03;
}

export function tlsRecordComplete(data: Buffer): boolean {
  return data.length >= 5 && data.length >= 5 + data.readUInt16BE(3);
}

/** The server name (SNI) of a TLS ClientHello, if present in the first record. */
export function tlsClientHelloSni(data: Buffer): string | undefined {
  try {
    return readSni(data);
  } catch (error) {
    if (error instanceof RangeError) return undefined; // truncated or lying lengths
    throw error;
  }
}

function readSni(data: Buffer): string | undefined {
  if (!looksLikeTls(data)) return undefined;
  const recordEnd = Math.min(data.length, 5 + data.readUInt16BE(3));
  const r = new Reader(data.subarray(0, recordEnd), 5);
  if (r.u8() !== 0x01) return undefined; // not a ClientHello
  r.skip(3 + 2 + 32); // handshake length, client version, random
  r.skip(r.u8()); // session id
  r.skip(r.u16()); // cipher suites
  r.skip(r.u8()); // compression methods
  const extensionsEnd = r.pos + r.u16();
  while (r.pos + 4 <= extensionsEnd) {
    const type = r.u16();
    const length = r.u16();
    if (type !== 0) {
      r.skip(length);
      continue;
    }
    const listEnd = r.pos + 2 + r.u16();
    while (r.pos + 3 <= listEnd) {
      const nameType = r.u8();
      const name = r.bytes(r.u16());
      if (nameType === 0) return name.toString('latin1');
    }
    return undefined;
  }
  return undefined;
}

class Reader {
  constructor(
    private readonly data: Buffer,
    public pos: number,
  ) {}

  u8(): number {
    this.need(1);
    return this.data.readUInt8(this.pos++);
  }

  u16(): number {
    this.need(2);
    const value = this.data.readUInt16BE(this.pos);
    this.pos += 2;
    return value;
  }

  bytes(length: number): Buffer {
    this.need(length);
    const out = this.data.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  skip(length: number): void {
    this.need(length);
    this.pos += length;
  }

  private need(length: number): void {
    if (this.pos + length > this.data.length) throw new RangeError('TLS record truncated');
  }
}

/** The first bytes as printable text, for a summary line. */
export function printablePrefix(data: Buffer, maxBytes = 60): string {
  return data
    .subarray(0, maxBytes)
    .toString('latin1')
    .replace(/[^\x20-\x7e]/g, '.');
}
