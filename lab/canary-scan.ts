import type { Canary } from './canaries.js';
import { CanaryScanner, compileCanaries, scanBytes, type CanaryHit, type CompiledCanaries } from './canary-forms.js';
import type { DecoyEvent } from './decoys/decoy-log.js';
import { looksLikeHttp } from './decoys/tcp-sniff.js';

export interface LocatedCanaryHit extends CanaryHit {
  /** Where it was seen, e.g. `decoy:http body 203.0.113.10:80` or `dns queries joined`. */
  where: string;
}

type Canaries = readonly Canary[] | CompiledCanaries;

const hitKey = (h: { value: string; form: string }): string => `${h.value}\u0000${h.form}`;

/**
 * Each named buffer scanned on its own, across line breaks too (files fetched from the box or left
 * in its workspace, bytes sent to the daemon-socket decoy); `where` is the buffer's name.
 */
export function scanEach(items: readonly { where: string; bytes: Uint8Array }[], canaries: Canaries): LocatedCanaryHit[] {
  const compiled = compileCanaries(canaries);
  return items.flatMap(({ where, bytes }) => scanBytes(bytes, compiled, { acrossLines: true }).map((h) => ({ ...h, where })));
}

function stripWhitespace(part: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(part.length);
  let n = 0;
  for (const b of part) if (b !== 0x20 && (b < 0x09 || b > 0x0d)) out[n++] = b;
  return out.subarray(0, n);
}

/**
 * Canaries split across channels or broken by whitespace: each part with ASCII whitespace
 * removed, all parts concatenated in order, and every ordered pair of parts. Returns only the
 * hits that no single part holds, even across its line breaks (those are the streaming scan's);
 * offsets are in the joined text. The input must be bounded — the heads and tails a
 * BoundedCapture keeps (`keptParts()`) — so a split in the middle of a stream larger than
 * head + tail is not seen here.
 */
export function scanJoined(parts: readonly Uint8Array[], canaries: Canaries): CanaryHit[] {
  const compiled = compileCanaries(canaries);
  const direct = new Set(parts.flatMap((p) => scanBytes(p, compiled, { acrossLines: true })).map(hitKey));
  const stripped = parts.map(stripWhitespace);
  const joins = [Buffer.concat(stripped)];
  for (let i = 0; i < stripped.length; i++) {
    for (let j = 0; j < stripped.length; j++) if (i !== j) joins.push(Buffer.concat([stripped[i] ?? Buffer.alloc(0), stripped[j] ?? Buffer.alloc(0)]));
  }
  const found = new Map<string, CanaryHit>();
  for (const join of joins) {
    for (const h of scanBytes(join, compiled)) if (!direct.has(hitKey(h)) && !found.has(hitKey(h))) found.set(hitKey(h), h);
  }
  return [...found.values()];
}

/**
 * A value cut anywhere and written in two pieces to two channels (the head of stdout and the tail of
 * stderr, say), each piece with other text around it: a whitespace-separated token of one part that
 * ends with the value's beginning, and a token of another part that starts with the rest. Raw form,
 * any letter case. Bounded input, like scanJoined.
 */
export function scanSplitAcross(parts: readonly Uint8Array[], canaries: readonly Canary[]): CanaryHit[] {
  const tokens = parts.map((p) =>
    Buffer.from(p)
      .toString('latin1')
      .toLowerCase()
      .split(/\s+/)
      .filter((t) => t.length > 0)
      .slice(0, 50_000),
  );
  const hits: CanaryHit[] = [];
  for (const c of canaries) {
    const v = c.value.toLowerCase();
    // Per part: the cut points where one of its tokens ends with the value's beginning / starts with its rest.
    const cuts = (part: string[], ends: boolean): Set<number> => {
      const out = new Set<number>();
      for (const t of part) for (let cut = 1; cut < v.length; cut++) if (ends ? t.endsWith(v.slice(0, cut)) : t.startsWith(v.slice(cut))) out.add(cut);
      return out;
    };
    const heads = tokens.map((part) => cuts(part, true));
    const tails = tokens.map((part) => cuts(part, false));
    const found = heads.some((h, i) => tails.some((t, j) => j !== i && [...h].some((cut) => t.has(cut))));
    if (found) hits.push({ label: c.label, value: c.value, form: 'raw', offset: 0 });
  }
  return hits;
}

function dnsLabels(name: string): string[] {
  return name
    .toLowerCase()
    .replace(/\.+$/, '')
    .split('.')
    .filter((l) => l.length > 0);
}

/** How many trailing labels every name of a group shares (its zone), leaving each name one label. */
function sharedSuffix(names: string[][]): number {
  let n = 0;
  for (;;) {
    const label = names[0]?.[names[0].length - 1 - n];
    if (label === undefined || names.some((l) => l.length - 1 - n <= 0 || l[l.length - 1 - n] !== label)) return n;
    n += 1;
  }
}

/**
 * Canaries carried in DNS query names, matched in any letter case (hex, base32, base64url, …
 * decode the same whatever case a resolver passed on): each name with its dots removed, then
 * the data labels of the distinct names of one zone (its last two labels) joined in query order
 * (a value split over several queries). Repeated names (A and AAAA, retries) count once.
 * `where` is `dns query <index>` or `dns queries joined <zone>`.
 */
export function scanDnsNames(names: readonly string[], canaries: readonly Canary[]): LocatedCanaryHit[] {
  return dnsNameHits(names, compileCanaries(canaries, { foldAll: true }));
}

/** scanDnsNames with a set compiled with `foldAll`. */
function dnsNameHits(names: readonly string[], compiled: CompiledCanaries): LocatedCanaryHit[] {
  const hits: LocatedCanaryHit[] = [];
  const single = new Set<string>();
  const distinct: string[][] = [];
  const seenNames = new Set<string>();
  names.forEach((name, index) => {
    const labels = dnsLabels(name);
    for (const h of scanBytes(Buffer.from(labels.join(''), 'latin1'), compiled)) {
      single.add(hitKey(h));
      hits.push({ ...h, where: `dns query ${index}` });
    }
    if (labels.length > 0 && !seenNames.has(labels.join('.'))) {
      seenNames.add(labels.join('.'));
      distinct.push(labels);
    }
  });
  const groups = new Map<string, string[][]>();
  for (const labels of distinct) {
    const zone = labels.slice(-2).join('.');
    const group = groups.get(zone);
    if (group) group.push(labels);
    else groups.set(zone, [labels]);
  }
  for (const [zone, group] of groups) {
    if (group.length < 2) continue;
    const shared = sharedSuffix(group);
    const joined = group.map((labels) => labels.slice(0, labels.length - shared).join('')).join('');
    for (const h of scanBytes(Buffer.from(joined, 'latin1'), compiled)) {
      if (!single.has(hitKey(h))) hits.push({ ...h, where: `dns queries joined ${zone}` });
    }
  }
  return hits;
}

function endpointText(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** `%XX` decoded where it is valid, everything else kept (a target partly percent-encoded). */
function percentDecoded(buf: Buffer): Buffer | undefined {
  if (!buf.includes(0x25)) return undefined;
  const text = buf.toString('latin1').replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(text, 'latin1');
}

/** A chunked body's data (lenient: stops at the first malformed or cut chunk). */
function dechunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', pos);
    const size = eol < 0 ? Number.NaN : Number.parseInt(body.subarray(pos, eol).toString('latin1').split(';')[0] ?? '', 16);
    if (!Number.isInteger(size) || size <= 0) break;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
    if (pos >= body.length) break;
  }
  return Buffer.concat(parts);
}

/** Recorded HTTP request: the head, and the body (the event's own body field when the decoy keeps one). */
function httpParts(event: DecoyEvent & { bodyBase64?: string }, payload: Buffer): { head: Buffer; body: Buffer } {
  const crlf = payload.indexOf('\r\n\r\n');
  const lf = payload.indexOf('\n\n');
  const [at, sep] = crlf >= 0 && (lf < 0 || crlf < lf) ? [crlf, 4] : lf >= 0 ? [lf, 2] : [-1, 0];
  const head = at < 0 ? payload : payload.subarray(0, at);
  const body = event.bodyBase64 !== undefined ? Buffer.from(event.bodyBase64, 'base64') : at < 0 ? Buffer.alloc(0) : payload.subarray(at + sep);
  return { head, body: /^transfer-encoding:.*chunked/im.test(head.toString('latin1')) ? dechunked(body) : body };
}

/** The names a DNS event asked about (its `dnsNames` when recorded, else from `detail`). */
function dnsEventNames(event: DecoyEvent & { dnsNames?: string[] }): string[] {
  if (event.dnsNames !== undefined) return event.dnsNames;
  const questions = event.detail?.['questions'];
  if (questions !== undefined) return questions.split('; ').map((q) => q.slice(q.indexOf(' ') + 1));
  const qname = event.detail?.['qname'];
  return qname !== undefined ? [qname] : [];
}

const ACROSS_LINES = { acrossLines: true } as const;

/**
 * Canaries in what the box sent to the lab's decoys, as the decoy log recorded it (each event's
 * first 4 KiB, and `bodyBase64`/`dnsNames` where the decoy records them): HTTP request head and
 * body (also percent-decoded, de-chunked, across line breaks), raw TCP streams and UDP
 * datagrams, TLS SNI and DNS names (see scanDnsNames), and the payloads to one endpoint joined in
 * arrival order (a value split over datagrams or connections). `where` reads e.g.
 * `decoy:http body 203.0.113.10:80`, `decoy:udp datagrams joined 198.51.100.7:123`.
 */
export function scanDecoyEvents(events: readonly DecoyEvent[], canaries: readonly Canary[]): LocatedCanaryHit[] {
  const compiled = compileCanaries(canaries);
  const folded = compileCanaries(canaries, { foldAll: true });
  const hits: LocatedCanaryHit[] = [];
  const seen = new Set<string>();
  const add = (found: CanaryHit[], where: string): void => {
    for (const h of found) {
      const key = `${hitKey(h)}\u0000${where}`;
      if (!seen.has(key)) {
        seen.add(key);
        hits.push({ ...h, where });
      }
    }
  };
  // Per endpoint, everything sent to it in arrival order, streamed: a value split over datagrams or connections.
  const streams = new Map<string, { where: string; scanner: CanaryScanner; count: number; direct: Set<string> }>();
  const dnsNames: string[] = [];
  for (const event of events) {
    const payload = Buffer.from(event.payloadBase64, 'base64');
    const at = endpointText(event.detail?.['localIPv4'] ?? event.local.address, event.local.port);
    const before = hits.length;
    if (event.service === 'dns') {
      const names = dnsEventNames(event);
      dnsNames.push(...names);
      const fromNames = dnsNameHits(names, folded).filter((h) => h.where.startsWith('dns query'));
      add(fromNames, `decoy:dns query ${at}`);
      const named = new Set(fromNames.map(hitKey));
      add(
        scanBytes(payload, compiled).filter((h) => !named.has(hitKey(h))),
        `decoy:dns packet ${at}`,
      );
      continue;
    }
    if (event.proto === 'tcp' && looksLikeHttp(payload)) {
      const kind = event.service === 'metadata' ? 'metadata' : 'http';
      const { head, body } = httpParts(event, payload);
      for (const [part, bytes] of [
        ['head', head],
        ['body', body],
      ] as const) {
        add(scanBytes(bytes, compiled, ACROSS_LINES), `decoy:${kind} ${part} ${at}`);
        const decoded = percentDecoded(bytes);
        if (decoded !== undefined) add(scanBytes(decoded, compiled, ACROSS_LINES), `decoy:${kind} ${part} ${at}`);
      }
    } else {
      add(scanBytes(payload, compiled, ACROSS_LINES), `decoy:${event.proto === 'udp' ? 'udp datagram' : 'tcp stream'} ${at}`);
      const sni = event.detail?.['tlsSni'];
      if (sni !== undefined) add(dnsNameHits([sni], folded), `decoy:tls sni ${at}`);
    }
    if (payload.length === 0) continue;
    const key = `${event.proto} ${at}`;
    let stream = streams.get(key);
    if (stream === undefined) {
      stream = {
        where: `decoy:${event.proto === 'udp' ? 'udp datagrams' : 'tcp streams'} joined ${at}`,
        scanner: new CanaryScanner(compiled, ACROSS_LINES),
        count: 0,
        direct: new Set(),
      };
      streams.set(key, stream);
    }
    stream.scanner.write(payload);
    stream.count += 1;
    for (const h of hits.slice(before)) stream.direct.add(hitKey(h));
  }
  for (const stream of streams.values()) {
    if (stream.count > 1)
      add(
        stream.scanner.hits().filter((h) => !stream.direct.has(hitKey(h))),
        stream.where,
      );
  }
  for (const h of dnsNameHits(dnsNames, folded)) {
    if (h.where.startsWith('dns queries joined')) add([h], `decoy:${h.where}`);
  }
  return hits;
}
