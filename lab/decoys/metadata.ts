import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { buildDecoyEvent, endpoint, oneLine } from './decoy-event.js';
import { MAX_PAYLOAD_BYTES, type DecoyLog, type Endpoint } from './decoy-log.js';
import { closeServer, listenTcp, once, type DecoyHandle } from './listen.js';
import { headerValue, routeMetadata, type MetadataCanaries } from './metadata-routes.js';

/** A contact that never became a routed request (no request at all, or one the parser refused). */
function recordContact(log: DecoyLog, state: { local: Endpoint; peer: Endpoint }, summary: string, payload: Buffer, detail: Record<string, string>): void {
  log.record(buildDecoyEvent({ service: 'metadata', proto: 'tcp', local: state.local, peer: state.peer, summary, payload, detail }));
}

export type { MetadataCanaries } from './metadata-routes.js';

/** Request bodies past this size are refused (413) and the connection closed. */
const MAX_BODY_BYTES = 64 * 1024;
const MAX_CONNECTIONS = 256;

/** Headers copied into an event's detail as `header.<name>`. */
const HEADERS_OF_INTEREST = [
  'host',
  'user-agent',
  'x-aws-ec2-metadata-token',
  'x-aws-ec2-metadata-token-ttl-seconds',
  'x-aliyun-ecs-metadata-token',
  'x-aliyun-ecs-metadata-token-ttl-seconds',
  'metadata-flavor',
  'metadata',
  'x-forwarded-for',
  'content-type',
  'content-length',
] as const;

export interface MetadataDecoyOptions {
  canaries: MetadataCanaries;
  roleName: string;
  log: DecoyLog;
}

export interface StartMetadataDecoyOptions extends MetadataDecoyOptions {
  host: string;
  port: number;
}

/** A metadata service that does not listen itself: another listener hands it connections. */
export interface MetadataDecoy {
  acceptConnection(socket: Socket): void;
  close(): Promise<void>;
}

interface SocketState {
  local: Endpoint;
  peer: Endpoint;
  requests: number;
}

function createMetadataHttp(options: MetadataDecoyOptions) {
  const { log } = options;
  const sockets = new Map<Socket, SocketState>();
  const server = createServer({
    requestTimeout: 5000,
    headersTimeout: 5000,
    keepAliveTimeout: 2000,
    connectionsCheckingInterval: 1000,
    maxHeaderSize: 16 * 1024,
  });
  server.maxConnections = MAX_CONNECTIONS;
  server.setTimeout(10_000, (socket: Socket) => socket.destroy());

  server.on('connection', (socket: Socket) => {
    // Addresses are read now: after a reset they are gone.
    const state: SocketState = {
      local: endpoint(socket.localAddress, socket.localPort),
      peer: endpoint(socket.remoteAddress, socket.remotePort),
      requests: 0,
    };
    sockets.set(socket, state);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      sockets.delete(socket);
      // A connection that never made a request (a port scan, a reset) is a contact too.
      if (state.requests === 0) {
        recordContact(log, state, 'TCP connection without HTTP request', Buffer.alloc(0), { noRequest: 'true' });
      }
    });
  });

  server.on('clientError', (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket) => {
    const state = sockets.get(socket);
    if (state !== undefined && error.code !== 'ECONNRESET') {
      state.requests += 1;
      const code = error.code ?? 'UNKNOWN';
      const malformed = code.startsWith('HPE_'); // a parse error, not a timeout
      recordContact(
        log,
        state,
        malformed ? `malformed HTTP request (${code})` : `HTTP client error (${code})`,
        Buffer.isBuffer(error.rawPacket) ? error.rawPacket : Buffer.alloc(0),
        { ...(malformed ? { malformed: 'true' } : {}), clientError: code, error: oneLine(error.message) },
      );
    }
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    else socket.destroy();
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = sockets.get(req.socket);
    if (state !== undefined) state.requests += 1;
    handleRequest(req, res, options, state);
  });

  const closeAll = (): void => {
    server.closeAllConnections();
    for (const socket of sockets.keys()) socket.destroy();
  };
  return { server, closeAll };
}

function handleRequest(req: IncomingMessage, res: ServerResponse, options: MetadataDecoyOptions, state: SocketState | undefined): void {
  const local = state?.local ?? endpoint(req.socket.localAddress, req.socket.localPort);
  const peer = state?.peer ?? endpoint(req.socket.remoteAddress, req.socket.remotePort);
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const path = pathOf(url);
  const head = Buffer.from(requestHead(req), 'latin1');
  const body: Buffer[] = [];
  let stored = 0;
  let total = 0;
  let done = false;

  const finish = (outcome: { status: number; provider: string; route: string; imdsToken?: string } | 'aborted'): void => {
    if (done) return;
    done = true;
    const detail: Record<string, string> = { method, url: oneLine(url, 1024), path: oneLine(path, 1024) };
    for (const name of HEADERS_OF_INTEREST) {
      const value = headerValue(req.headers, name);
      if (value !== undefined) detail[`header.${name}`] = oneLine(value, 1024);
    }
    detail['bodyBytes'] = String(total);
    if (outcome === 'aborted') detail['aborted'] = 'true';
    else {
      detail['status'] = String(outcome.status);
      detail['provider'] = outcome.provider;
      detail['route'] = outcome.route;
      if (outcome.imdsToken !== undefined) detail['imdsToken'] = outcome.imdsToken;
    }
    options.log.record(
      buildDecoyEvent({
        service: 'metadata',
        proto: 'tcp',
        local,
        peer,
        summary: `${method} ${url}`,
        payload: Buffer.concat([head, ...body]),
        body: Buffer.concat(body),
        detail,
      }),
    );
  };

  req.on('data', (chunk: Buffer) => {
    total += chunk.length;
    if (stored < MAX_PAYLOAD_BYTES) {
      const part = chunk.subarray(0, MAX_PAYLOAD_BYTES - stored);
      body.push(part);
      stored += part.length;
    }
    if (total > MAX_BODY_BYTES && !res.headersSent) {
      finish({ status: 413, provider: 'none', route: 'body-too-large' });
      res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
      res.end('Payload Too Large\n');
      req.socket.destroySoon();
    }
  });
  req.on('end', () => {
    if (done) return;
    const reply = routeMetadata({ method, path, headers: req.headers }, options);
    finish(reply);
    res.writeHead(reply.status, { ...reply.headers, 'content-length': Buffer.byteLength(reply.body) });
    res.end(method === 'HEAD' ? undefined : reply.body);
  });
  req.on('close', () => finish('aborted'));
  req.on('error', () => finish('aborted'));
}

/** The request line and headers as the client sent them (node:http has parsed them; rebuilt from rawHeaders). */
function requestHead(req: IncomingMessage): string {
  const lines = [`${req.method ?? ''} ${req.url ?? ''} HTTP/${req.httpVersion}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function pathOf(url: string): string {
  try {
    return new URL(url, 'http://metadata.invalid').pathname;
  } catch {
    return url.split('?')[0] ?? url;
  }
}

/** Builds the metadata service without binding; feed it sockets with `acceptConnection`. */
export function createMetadataDecoy(options: MetadataDecoyOptions): MetadataDecoy {
  const { server, closeAll } = createMetadataHttp(options);
  return {
    acceptConnection: (socket) => {
      server.emit('connection', socket);
    },
    close: once(async () => {
      closeAll();
      await closeServer(server);
    }),
  };
}

/** Fake cloud metadata (AWS IMDSv1/v2, GCP, Alibaba, Azure) on host:port; every request is logged. */
export async function startMetadataDecoy(options: StartMetadataDecoyOptions): Promise<DecoyHandle> {
  const { server, closeAll } = createMetadataHttp(options);
  const port = await listenTcp(server, options.host, options.port);
  return {
    listeners: [{ service: 'metadata', proto: 'tcp', host: options.host, port }],
    close: once(async () => {
      const closed = closeServer(server);
      closeAll();
      await closed;
    }),
  };
}
