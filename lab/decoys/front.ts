import { connect, createServer, isIP, type Socket } from 'node:net';
import { buildDecoyEvent, endpoint } from './decoy-event.js';
import type { DecoyLog } from './decoy-log.js';
import { resolveA, type DnsAnswers } from './dns-answer.js';
import { closeServer, listenTcp, once, type DecoyHandle } from './listen.js';
import { httpBodyStart, looksLikeHttp, looksLikeTls, parseHttpHead, tlsClientHelloSni, tlsRecordComplete } from './tcp-sniff.js';

/** Bounds of one fronted connection: the first message, the whole relay, the bytes relayed each way. */
const FRONT_LIMITS = { headBytes: 8192, readMs: 3000, relayMs: 5000, relayBytes: 64 * 1024, maxConnections: 64 } as const;

export interface StartFrontOptions {
  host: string;
  port: number;
  /** Onward connections leave from this address (the lab's policy filter lets it pass, as a CDN is beyond the box's egress). */
  relaySource: string;
  /** How the front resolves names: the lab resolver's own answers, in process (no DNS traffic of its own). */
  answers: DnsAnswers;
  log: DecoyLog;
}

/** Where a first message asks to go, and how: `connect` answers 200 and tunnels; `forward` relays the bytes as sent. */
export interface FrontRoute {
  how: 'connect' | 'forward';
  via: 'CONNECT' | 'absolute-uri' | 'host' | 'sni';
  host: string;
  port: number;
}

function splitAuthority(authority: string, defaultPort: number): { host: string; port: number } | undefined {
  const m = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(authority) ?? /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (m === null) return undefined;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: (m[1] ?? '').toLowerCase(), port } : undefined;
}

/** Reads a first message: CONNECT host:port, an absolute-URI request, an origin-form request by its Host, a TLS ClientHello by its SNI. */
export function frontRoute(first: Buffer): FrontRoute | undefined {
  if (looksLikeHttp(first)) {
    const head = parseHttpHead(first);
    if (head === undefined) return undefined;
    if (head.method === 'CONNECT') {
      const to = splitAuthority(head.target, 443);
      return to && { how: 'connect', via: 'CONNECT', ...to };
    }
    const absolute = /^http:\/\/([^/]+)/i.exec(head.target);
    if (absolute !== null) {
      const to = splitAuthority(absolute[1] ?? '', 80);
      return to && { how: 'forward', via: 'absolute-uri', ...to };
    }
    const to = head.headers['host'] === undefined ? undefined : splitAuthority(head.headers['host'], 80);
    return to && { how: 'forward', via: 'host', ...to };
  }
  const sni = looksLikeTls(first) ? tlsClientHelloSni(first) : undefined;
  return sni === undefined ? undefined : { how: 'forward', via: 'sni', host: sni.toLowerCase(), port: 443 };
}

/**
 * The lab's fronting proxy: what an allowlist may let through when it allows a forward proxy or a CDN-like front
 * that routes by Host header and TLS SNI. It logs each request (service `front`) and relays it, bounded, to the
 * lab decoy it names, which logs the contact itself (the outside evidence of a crossing).
 */
export async function startFront(options: StartFrontOptions): Promise<DecoyHandle> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    serveFront(client, options, sockets);
  });
  server.maxConnections = FRONT_LIMITS.maxConnections;
  const port = await listenTcp(server, options.host, options.port);
  return {
    listeners: [{ service: 'front', proto: 'tcp', host: options.host, port }],
    close: once(async () => {
      const closed = closeServer(server);
      for (const s of sockets) s.destroy();
      await closed;
    }),
  };
}

function serveFront(client: Socket, options: StartFrontOptions, sockets: Set<Socket>): void {
  const local = endpoint(client.localAddress, client.localPort);
  const peer = endpoint(client.remoteAddress, client.remotePort);
  let first = Buffer.alloc(0);
  let decided = false;
  const readTimer = setTimeout(() => decide(), FRONT_LIMITS.readMs);
  const complete = (): boolean =>
    (looksLikeHttp(first) && httpBodyStart(first) !== undefined) || (looksLikeTls(first) && tlsRecordComplete(first)) || first.length >= FRONT_LIMITS.headBytes;

  const onData = (chunk: Buffer): void => {
    first = Buffer.concat([first, chunk]).subarray(0, FRONT_LIMITS.headBytes);
    if (complete()) decide();
  };
  client.on('data', onData);
  client.once('end', () => decide());

  function decide(): void {
    if (decided) return;
    decided = true;
    clearTimeout(readTimer);
    client.off('data', onData);
    client.pause();
    const route = frontRoute(first);
    const address = route === undefined ? undefined : isIP(route.host) !== 0 ? route.host : resolveA(route.host, options.answers);
    const summary =
      route === undefined
        ? 'front: no route in the first message'
        : `front ${route.via} ${route.host}:${route.port}${address !== undefined && address !== route.host ? ` (${address})` : ''}`;
    const detail: Record<string, string> =
      route === undefined ? { routed: 'false' } : { routed: String(address !== undefined), via: route.via, target: `${route.host}:${route.port}` };
    options.log.record(buildDecoyEvent({ service: 'front', proto: 'tcp', local, peer, summary, payload: first, detail }));
    if (route === undefined || address === undefined) {
      client.end(route === undefined ? '' : 'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    relay(client, first, route, address, options, sockets);
  }
}

function relay(client: Socket, first: Buffer, route: FrontRoute, address: string, options: StartFrontOptions, sockets: Set<Socket>): void {
  const upstream = connect({ host: address, port: route.port, localAddress: isIP(address) === isIP(options.relaySource) ? options.relaySource : undefined });
  sockets.add(upstream);
  const stop = (): void => {
    clearTimeout(timer);
    upstream.destroy();
    client.destroy();
  };
  const timer = setTimeout(stop, FRONT_LIMITS.relayMs);
  upstream.once('close', () => {
    sockets.delete(upstream);
    client.end();
  });
  client.once('close', stop);
  upstream.on('error', () => client.destroy());
  const capped = (from: Socket, to: Socket): void => {
    let bytes = 0;
    from.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > FRONT_LIMITS.relayBytes) return stop();
      to.write(chunk);
    });
    from.once('end', () => to.end());
  };
  upstream.once('connect', () => {
    if (route.how === 'connect') {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      const early = first.subarray(httpBodyStart(first) ?? first.length);
      if (early.length > 0) upstream.write(early);
    } else upstream.write(first);
    capped(client, upstream);
    capped(upstream, client);
    client.resume();
  });
}
