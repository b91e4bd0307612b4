import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIPv6, type Server } from 'node:net';
import { DecoyBindError } from './errors.js';

export type ListenerKind = 'metadata' | 'dns' | 'canary-tcp' | 'catch-all-udp' | 'front';

/** One bound socket of a decoy; `port` is the real port (useful when 0 was asked). */
export interface ListenerInfo {
  service: ListenerKind;
  proto: 'tcp' | 'udp';
  host: string;
  port: number;
  /** Set when this service does not bind itself but is served through a wildcard canary listener. */
  via?: { host: string; port: number };
}

export interface DecoyHandle {
  readonly listeners: readonly ListenerInfo[];
  /** Stops listening and destroys every open connection. Idempotent. */
  close(): Promise<void>;
}

/** IPv6 listeners are v6-only so that `::` and `0.0.0.0` on the same port do not clash. */
export function listenTcp(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(new DecoyBindError('tcp', host, port, error));
    };
    const onListening = (): void => {
      server.off('error', onError);
      // A listening server can still report errors (e.g. EMFILE on accept): never crash the lab for them.
      server.on('error', () => undefined);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host, port, ipv6Only: isIPv6(host), exclusive: true });
  });
}

export function bindUdp(host: string, port: number): Promise<{ socket: UdpSocket; port: number }> {
  const v6 = isIPv6(host);
  const socket = createSocket({ type: v6 ? 'udp6' : 'udp4', ipv6Only: v6 });
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      socket.off('listening', onListening);
      void closeUdp(socket);
      reject(new DecoyBindError('udp', host, port, error));
    };
    const onListening = (): void => {
      socket.off('error', onError);
      socket.on('error', () => undefined);
      resolve({ socket, port: socket.address().port });
    };
    socket.once('error', onError);
    socket.once('listening', onListening);
    socket.bind({ address: host, port, exclusive: true });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}

export function closeUdp(socket: UdpSocket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve(); // already closed
    }
  });
}

/** Makes an async close idempotent: later calls get the first call's promise. */
export function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}
