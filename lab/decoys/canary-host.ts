import type { RemoteInfo } from 'node:dgram';
import { createServer, type DropArgument, type Socket } from 'node:net';
import { buildDecoyEvent, endpoint, isWildcardHost, matchableIp } from './decoy-event.js';
import { MAX_PAYLOAD_BYTES, type DecoyLog, type DecoyService, type Endpoint } from './decoy-log.js';
import { bindUdp, closeServer, closeUdp, listenTcp, once, type DecoyHandle } from './listen.js';
import {
  httpBodyComplete,
  httpBodyStart,
  looksLikeHttp,
  looksLikeTls,
  parseHttpHead,
  printablePrefix,
  tlsClientHelloSni,
  tlsRecordComplete,
} from './tcp-sniff.js';

export const CANARY_DEFAULTS = {
  idleTimeoutMs: 1000,
  /** Hard limit on the read phase, however slowly bytes drip in. */
  readDeadlineMs: 5000,
  /** After the reply, how long the peer gets to close before the socket is destroyed. */
  lingerMs: 2000,
  maxConnections: 256,
} as const;

export type ConnectionHandler = (socket: Socket) => void;

export interface StartCanaryTcpOptions {
  host: string;
  port: number;
  banner: string;
  log: DecoyLog;
  idleTimeoutMs?: number;
  maxConnections?: number;
  /**
   * Connections whose dialled address (IPv4-mapped unwrapped, IPv6 canonical) is a key
   * are handed to that handler instead: a wildcard listener on port 80 cannot coexist
   * with a metadata listener on 169.254.169.254:80, so it serves the metadata decoy.
   */
  divert?: ReadonlyMap<string, ConnectionHandler>;
}

type EndedBy = 'http-head' | 'http-body' | 'tls-record' | 'byte-cap' | 'idle' | 'deadline' | 'peer-end' | 'error' | 'closed' | 'shutdown';

/** Stream bytes kept per connection: an HTTP head of up to 4 KiB plus up to 4 KiB of its body. */
const STREAM_KEEP_BYTES = 2 * MAX_PAYLOAD_BYTES;

/**
 * Accepts any TCP connection, reads what the client sends first (≤ 4 KiB, and for HTTP
 * up to 4 KiB of the request body; short idle timeout), logs it, answers HTTP with a 200 carrying the banner or anything else with
 * the raw banner, and closes.
 */
export async function startCanaryTcp(options: StartCanaryTcpOptions): Promise<DecoyHandle> {
  const { log, banner } = options;
  const idleTimeoutMs = options.idleTimeoutMs ?? CANARY_DEFAULTS.idleTimeoutMs;
  const shutdowns = new Set<() => void>();
  const diverted = new Set<Socket>();

  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => undefined);
    const handler = options.divert?.get(matchableIp(socket.localAddress ?? ''));
    if (handler !== undefined) {
      diverted.add(socket);
      socket.once('close', () => diverted.delete(socket));
      handler(socket);
      return;
    }
    const shutdown = serveCanaryConnection(socket, { log, banner, idleTimeoutMs });
    shutdowns.add(shutdown);
    socket.once('close', () => shutdowns.delete(shutdown));
  });
  server.maxConnections = options.maxConnections ?? CANARY_DEFAULTS.maxConnections;
  server.on('drop', (data?: DropArgument) => {
    log.record(
      buildDecoyEvent({
        service: 'catch-all-tcp',
        proto: 'tcp',
        local: endpoint(data?.localAddress, data?.localPort),
        peer: endpoint(data?.remoteAddress, data?.remotePort),
        summary: 'TCP connection dropped (too many open connections)',
        payload: Buffer.alloc(0),
        detail: { dropped: 'true' },
      }),
    );
  });

  const port = await listenTcp(server, options.host, options.port);
  return {
    listeners: [{ service: 'canary-tcp', proto: 'tcp', host: options.host, port }],
    close: once(async () => {
      const closed = closeServer(server);
      for (const shutdown of [...shutdowns]) shutdown();
      for (const socket of diverted) socket.destroy();
      await closed;
    }),
  };
}

interface ConnectionContext {
  log: DecoyLog;
  banner: string;
  idleTimeoutMs: number;
}

/** Runs one connection; returns the function that ends it at shutdown. */
function serveCanaryConnection(socket: Socket, ctx: ConnectionContext): () => void {
  const local = endpoint(socket.localAddress, socket.localPort);
  const peer = endpoint(socket.remoteAddress, socket.remotePort);
  let data = Buffer.alloc(0);
  let receivedBytes = 0;
  let reading = true;
  let idleTimer = setTimeout(() => endRead('idle'), ctx.idleTimeoutMs);
  const deadlineTimer = setTimeout(() => endRead('deadline'), CANARY_DEFAULTS.readDeadlineMs);
  let lingerTimer: NodeJS.Timeout | undefined;

  function endRead(endedBy: EndedBy): void {
    if (!reading) return;
    reading = false;
    clearTimeout(idleTimer);
    clearTimeout(deadlineTimer);
    const isHttp = looksLikeHttp(data);
    ctx.log.record(connectionEvent(isHttp ? 'canary-http' : 'catch-all-tcp', local, peer, data, receivedBytes, endedBy));
    if (endedBy === 'error' || endedBy === 'closed' || endedBy === 'shutdown' || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(isHttp ? httpReply(ctx.banner) : `${ctx.banner}\n`);
    lingerTimer = setTimeout(() => socket.destroy(), CANARY_DEFAULTS.lingerMs);
  }

  socket.on('data', (chunk: Buffer) => {
    if (!reading) return; // after the read phase: discard
    receivedBytes += chunk.length;
    if (data.length < STREAM_KEEP_BYTES) data = Buffer.concat([data, chunk.subarray(0, STREAM_KEEP_BYTES - data.length)]);
    const http = looksLikeHttp(data);
    const bodyStart = http ? httpBodyStart(data) : undefined;
    if (bodyStart !== undefined && httpBodyComplete(data, MAX_PAYLOAD_BYTES)) endRead(data.length > bodyStart ? 'http-body' : 'http-head');
    else if (bodyStart !== undefined) {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => endRead('idle'), ctx.idleTimeoutMs);
    } else if (looksLikeTls(data) && tlsRecordComplete(data)) endRead('tls-record');
    else if (data.length >= MAX_PAYLOAD_BYTES) endRead('byte-cap');
    else {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => endRead('idle'), ctx.idleTimeoutMs);
    }
  });
  socket.on('end', () => endRead('peer-end'));
  socket.on('error', () => endRead('error'));
  socket.once('close', () => {
    endRead('closed');
    clearTimeout(lingerTimer);
  });

  return () => {
    endRead('shutdown');
    socket.destroy();
  };
}

function connectionEvent(service: DecoyService, local: Endpoint, peer: Endpoint, data: Buffer, receivedBytes: number, endedBy: EndedBy) {
  const detail: Record<string, string> = { bytes: String(receivedBytes), endedBy };
  let summary: string;
  const http = parseHttpHead(data);
  const bodyStart = http === undefined ? undefined : httpBodyStart(data);
  const body = bodyStart === undefined ? undefined : data.subarray(bodyStart);
  if (http !== undefined) {
    summary = `${http.method} ${http.target}`;
    detail['method'] = http.method;
    detail['target'] = http.target;
    const host = http.headers['host'];
    if (host !== undefined) detail['host'] = host;
    const userAgent = http.headers['user-agent'];
    if (userAgent !== undefined) detail['userAgent'] = userAgent;
  } else if (looksLikeTls(data)) {
    const sni = tlsClientHelloSni(data);
    summary = sni !== undefined ? `TLS ClientHello sni=${sni}` : 'TLS handshake';
    if (sni !== undefined) detail['tlsSni'] = sni;
  } else if (data.length > 0) {
    summary = `TCP ${receivedBytes} bytes: ${printablePrefix(data)}`;
  } else {
    summary = 'TCP connection without data';
  }
  return buildDecoyEvent({ service, proto: 'tcp', local, peer, summary, payload: data, ...(body !== undefined ? { body } : {}), detail });
}

function httpReply(banner: string): string {
  const body = `${banner}\n`;
  return ['HTTP/1.1 200 OK', 'Content-Type: text/plain; charset=utf-8', `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', body].join(
    '\r\n',
  );
}

export interface StartCatchAllUdpOptions {
  host: string;
  port: number;
  log: DecoyLog;
  /** If set, every datagram is answered with it; by default nothing is sent back. */
  banner?: string;
}

/** Logs every datagram (first 4 KiB) sent to host:port. */
export async function startCatchAllUdp(options: StartCatchAllUdpOptions): Promise<DecoyHandle> {
  const { socket, port } = await bindUdp(options.host, options.port);
  const local = endpoint(options.host, port);
  const wildcard = isWildcardHost(options.host);
  socket.on('message', (message: Buffer, rinfo: RemoteInfo) => {
    const detail: Record<string, string> = { bytes: String(message.length) };
    // Node's dgram cannot read the datagram's destination address (no IP_PKTINFO).
    if (wildcard) detail['localAddressKnown'] = 'false';
    options.log.record(
      buildDecoyEvent({
        service: 'catch-all-udp',
        proto: 'udp',
        local,
        peer: endpoint(rinfo.address, rinfo.port),
        summary: message.length > 0 ? `UDP ${message.length} bytes: ${printablePrefix(message)}` : 'UDP empty datagram',
        payload: message,
        detail,
      }),
    );
    if (options.banner !== undefined) socket.send(`${options.banner}\n`, rinfo.port, rinfo.address, () => undefined);
  });
  return {
    listeners: [{ service: 'catch-all-udp', proto: 'udp', host: options.host, port }],
    close: once(() => closeUdp(socket)),
  };
}
