import type { RemoteInfo } from 'node:dgram';
import { createServer, type Socket } from 'node:net';
import { buildDecoyEvent, endpoint, isWildcardHost } from './decoy-event.js';
import type { DecoyLog, Endpoint } from './decoy-log.js';
import { answerDnsQuery, validateDnsAnswers, type DnsAnswers, type DnsQueryOutcome } from './dns-answer.js';
import { DecoyBindError, LabConfigError } from './errors.js';
import { bindUdp, closeServer, closeUdp, listenTcp, once, type DecoyHandle } from './listen.js';

export type { DnsAnswers, DnsRecordOverride } from './dns-answer.js';

const MAX_CONNECTIONS = 256;
const TCP_IDLE_MS = 10_000;
const MAX_MESSAGES_PER_CONNECTION = 1000;
const EPHEMERAL_PORT_TRIES = 5;

export interface StartDnsDecoyOptions {
  host: string;
  /** One port for both UDP and TCP; 0 picks a free one. */
  port: number;
  answers: DnsAnswers;
  log: DecoyLog;
}

/** A resolver on UDP and TCP host:port that answers every A/AAAA name and logs every question. */
export async function startDnsDecoy(options: StartDnsDecoyOptions): Promise<DecoyHandle> {
  const problems = validateDnsAnswers(options.answers);
  if (problems.length > 0) throw new LabConfigError(problems);

  for (let attempt = 1; ; attempt += 1) {
    const tcp = createDnsTcpServer(options);
    const port = await listenTcp(tcp.server, options.host, options.port);
    try {
      const udp = await bindUdp(options.host, port);
      const wildcard = isWildcardHost(options.host);
      udp.socket.on('message', (message: Buffer, rinfo: RemoteInfo) => {
        const local = endpoint(options.host, port);
        const outcome = answerDnsQuery(message, options.answers);
        logDns(options.log, 'udp', local, endpoint(rinfo.address, rinfo.port), message, outcome, wildcard);
        if (outcome.kind === 'answered') udp.socket.send(outcome.response, rinfo.port, rinfo.address, () => undefined);
      });
      return {
        listeners: [
          { service: 'dns', proto: 'udp', host: options.host, port },
          { service: 'dns', proto: 'tcp', host: options.host, port },
        ],
        close: once(async () => {
          await Promise.all([tcp.close(), closeUdp(udp.socket)]);
        }),
      };
    } catch (error) {
      await tcp.close();
      // With port 0 the TCP port may be taken on UDP by someone else: pick another.
      const retry = options.port === 0 && attempt < EPHEMERAL_PORT_TRIES && error instanceof DecoyBindError && error.systemCode === 'EADDRINUSE';
      if (!retry) throw error;
    }
  }
}

function createDnsTcpServer(options: StartDnsDecoyOptions) {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    const local = endpoint(socket.localAddress, socket.localPort);
    const peer = endpoint(socket.remoteAddress, socket.remotePort);
    let pending = Buffer.alloc(0);
    let messages = 0;
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      // Framing bounds the buffer: at most one 2-byte length plus 65 535 bytes are pending.
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2) {
        const length = pending.readUInt16BE(0);
        if (pending.length < 2 + length) break;
        const message = pending.subarray(2, 2 + length);
        pending = pending.subarray(2 + length);
        messages += 1;
        const outcome = answerDnsQuery(message, options.answers);
        logDns(options.log, 'tcp', local, peer, message, outcome, false);
        if (outcome.kind === 'answered' && socket.writable) {
          const frame = Buffer.alloc(2 + outcome.response.length);
          frame.writeUInt16BE(outcome.response.length, 0);
          outcome.response.copy(frame, 2);
          socket.write(frame);
        }
        if (messages >= MAX_MESSAGES_PER_CONNECTION) {
          socket.destroy();
          return;
        }
      }
    });
    socket.on('end', () => socket.end());
    socket.once('close', () => {
      sockets.delete(socket);
      if (pending.length > 0 || messages === 0) {
        const truncated = pending.length > 0;
        options.log.record(
          buildDecoyEvent({
            service: 'dns',
            proto: 'tcp',
            local,
            peer,
            summary: truncated ? `incomplete DNS/TCP frame (${pending.length} bytes)` : 'TCP connection without DNS query',
            payload: pending,
            detail: truncated ? { malformed: 'true', error: 'connection closed inside a frame' } : { noQuery: 'true' },
          }),
        );
      }
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  return {
    server,
    close: async () => {
      const closed = closeServer(server);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function logDns(log: DecoyLog, proto: 'tcp' | 'udp', local: Endpoint, peer: Endpoint, payload: Buffer, outcome: DnsQueryOutcome, wildcardUdp: boolean): void {
  const detail: Record<string, string> = {};
  // Node's dgram cannot read the datagram's destination address (no IP_PKTINFO).
  if (wildcardUdp) detail['localAddressKnown'] = 'false';
  let summary: string;
  if (outcome.kind === 'malformed') {
    summary = `malformed DNS packet (${payload.length} bytes)`;
    detail['malformed'] = 'true';
    detail['error'] = outcome.error;
  } else {
    const first = outcome.questions[0];
    if (first !== undefined) {
      detail['qname'] = first.name;
      detail['qtype'] = first.type;
      detail['qclass'] = first.class;
    }
    if (outcome.questions.length > 1) {
      detail['questions'] = outcome.questions.map((q) => `${q.type} ${q.name}.`).join('; ');
    }
    summary = outcome.questions.length > 0 ? outcome.questions.map((q) => `${q.type}? ${q.name}.`).join(', ') : 'DNS message without question';
    if (outcome.kind === 'ignored') {
      summary = `ignored: ${summary}`;
      detail['ignored'] = outcome.reason;
    } else {
      detail['id'] = String(outcome.id);
      detail['rcode'] = outcome.rcode;
      detail['answers'] = outcome.answers.join(',');
    }
  }
  const dnsNames = outcome.kind === 'malformed' ? [] : outcome.questions.map((q) => q.name);
  log.record(buildDecoyEvent({ service: 'dns', proto, local, peer, summary, payload, dnsNames, detail }));
}
