import { createSocket } from 'node:dgram';
import { realpathSync } from 'node:fs';
import { isIP, isIPv6 } from 'node:net';
import { createInterface } from 'node:readline';
import * as dnsPacket from 'dns-packet';
import { pathToFileURL } from 'node:url';
import { startCanaryTcp, startCatchAllUdp, type ConnectionHandler } from './canary-host.js';
import { isWildcardHost, matchableIp } from './decoy-event.js';
import { DecoyLog, type DecoyEvent } from './decoy-log.js';
import { startDnsDecoy } from './dns.js';
import { DecoyError } from './errors.js';
import { startFront } from './front.js';
import { parseLabConfig, type LabConfig, type LabConfigInput, type LabServiceConfig } from './lab-config.js';
import { once, type DecoyHandle, type ListenerInfo } from './listen.js';
import { createMetadataDecoy, startMetadataDecoy, type MetadataDecoy } from './metadata.js';

export {
  CanariesSchema,
  DnsAnswersSchema,
  LabConfigSchema,
  LabServiceSchema,
  defaultLabServices,
  parseLabConfig,
  type LabConfig,
  type LabConfigInput,
  type LabServiceConfig,
} from './lab-config.js';

export interface LabServices {
  readonly listeners: readonly ListenerInfo[];
  readonly log: DecoyLog;
  /** Closes every listener and connection. Idempotent. */
  close(): Promise<void>;
}

export interface StartLabServicesOptions {
  /** Where events go; by default a new log bounded by `config.maxEvents`. */
  log?: DecoyLog;
}

/** Lines the lab-server process prints on stdout, one JSON object each. */
export type LabServerLine =
  | { type: 'ready'; pid: number; listeners: readonly ListenerInfo[] }
  | { type: 'event'; event: DecoyEvent }
  | { type: 'stopped'; reason: string; events: number; dropped: number }
  | { type: 'witness-query-sent'; name: string; port: number }
  | { type: 'witness-query-failed'; name: string; message: string }
  | { type: 'synced'; id: string }
  | { type: 'error'; code: string; message: string };

/**
 * For each metadata service that shares a port with a wildcard canary TCP listener of
 * the same address family, the index of that canary. Linux refuses a specific and a
 * wildcard listener on one port, so such a metadata service is served through the canary.
 */
export function planMetadataDiversions(services: readonly LabServiceConfig[]): Map<number, number> {
  const plan = new Map<number, number>();
  services.forEach((metadata, metadataIndex) => {
    if (metadata.kind !== 'metadata' || metadata.port === 0 || isWildcardHost(metadata.host)) return;
    const canaryIndex = services.findIndex(
      (canary) =>
        canary.kind === 'canary-tcp' &&
        canary.port === metadata.port &&
        isWildcardHost(canary.host) &&
        isIPv6(canary.host) === isIPv6(matchableIp(metadata.host)),
    );
    if (canaryIndex >= 0) plan.set(metadataIndex, canaryIndex);
  });
  return plan;
}

/** Starts every configured decoy; on any failure closes what had started and rethrows. */
export async function startLabServices(input: LabConfigInput | LabConfig, options: StartLabServicesOptions = {}): Promise<LabServices> {
  const config = parseLabConfig(input);
  const log = options.log ?? new DecoyLog({ maxEvents: config.maxEvents });
  const metadataOptions = { canaries: config.canaries, roleName: config.roleName, log };
  const diversions = planMetadataDiversions(config.services);

  const divertedDecoys = new Map<number, MetadataDecoy>();
  const divertMaps = new Map<number, Map<string, ConnectionHandler>>();
  for (const [metadataIndex, canaryIndex] of diversions) {
    const service = config.services[metadataIndex];
    if (service === undefined) continue;
    const decoy = createMetadataDecoy(metadataOptions);
    divertedDecoys.set(metadataIndex, decoy);
    const map = divertMaps.get(canaryIndex) ?? new Map<string, ConnectionHandler>();
    map.set(matchableIp(service.host), (socket) => decoy.acceptConnection(socket));
    divertMaps.set(canaryIndex, map);
  }

  const starting = config.services.map((service, index): Promise<DecoyHandle> | undefined => {
    switch (service.kind) {
      case 'metadata':
        return divertedDecoys.has(index) ? undefined : startMetadataDecoy({ ...metadataOptions, host: service.host, port: service.port });
      case 'dns':
        return startDnsDecoy({ host: service.host, port: service.port, answers: service.answers, log });
      case 'canary-tcp':
        return startCanaryTcp({
          host: service.host,
          port: service.port,
          banner: service.banner ?? config.banner,
          log,
          ...(divertMaps.has(index) ? { divert: divertMaps.get(index) } : {}),
        });
      case 'catch-all-udp':
        return startCatchAllUdp({ host: service.host, port: service.port, log, banner: service.banner });
      case 'front':
        return startFront({ host: service.host, port: service.port, relaySource: service.relaySource, answers: service.answers, log });
    }
  });
  const settled = await Promise.allSettled(starting.map((p) => p ?? Promise.resolve(undefined)));
  const handles = settled.flatMap((s) => (s.status === 'fulfilled' && s.value !== undefined ? [s.value] : []));
  const closeAll = once(async () => {
    await Promise.all([...handles.map((h) => h.close()), ...[...divertedDecoys.values()].map((d) => d.close())]);
  });
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure !== undefined) {
    await closeAll();
    throw failure.reason;
  }

  const listeners: ListenerInfo[] = [];
  settled.forEach((result, index) => {
    if (result.status === 'fulfilled' && result.value !== undefined) {
      listeners.push(...result.value.listeners);
      return;
    }
    const service = config.services[index];
    const canaryIndex = diversions.get(index);
    const via = canaryIndex === undefined ? undefined : settled[canaryIndex];
    if (service === undefined || via?.status !== 'fulfilled' || via.value === undefined) return;
    const viaListener = via.value.listeners[0];
    if (viaListener === undefined) return;
    listeners.push({
      service: 'metadata',
      proto: 'tcp',
      host: service.host,
      port: service.port,
      via: { host: viaListener.host, port: viaListener.port },
    });
  });
  return { listeners, log, close: closeAll };
}

/** Commands the parent writes on the server's stdin, one JSON object per line. */
export type LabServerCommand = { type: 'witness-query'; name: string; server: string; port: number } | { type: 'sync'; id: string };

const WITNESS_NAME = /^[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63}){1,6}$/;

/**
 * Proof of life of the lab's witnesses: one DNS query, sent from inside the lab to a lab decoy. Only the
 * harness sends it (on its stdin); the resolver's log and the packet capture must both show it.
 */
function sendWitnessQuery(cmd: Extract<LabServerCommand, { type: 'witness-query' }>, print: (line: LabServerLine) => void): void {
  if (!WITNESS_NAME.test(String(cmd.name)) || isIP(String(cmd.server)) === 0 || !Number.isInteger(cmd.port)) {
    print({ type: 'witness-query-failed', name: String(cmd.name).slice(0, 80), message: 'invalid witness query' });
    return;
  }
  const query = dnsPacket.encode({ type: 'query', id: 0x5c5c, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name: cmd.name }] });
  const socket = createSocket(isIPv6(cmd.server) ? 'udp6' : 'udp4');
  socket.on('error', (error) => {
    print({ type: 'witness-query-failed', name: cmd.name, message: error.message });
    socket.close();
  });
  socket.bind(0, () => {
    const port = socket.address().port;
    socket.send(query, cmd.port, cmd.server, (error) => {
      if (error) print({ type: 'witness-query-failed', name: cmd.name, message: error.message });
      else print({ type: 'witness-query-sent', name: cmd.name, port });
      // Keep the socket a moment so the resolver's answer is not refused with an ICMP error.
      setTimeout(() => socket.close(), 500).unref();
    });
  });
}

/** Loop turns a sync waits at least: more than the deepest chain of stages a decoy needs to log what is already queued. */
const SYNC_TURNS = 10;
/** A box still sending when the harness reads is not waited for beyond this. */
const SYNC_MAX_TURNS = 10_000;

/**
 * Answers once what reached a decoy socket before this command is logged. What a box sent before it exited is
 * queued in the kernel already, and each turn of the loop's poll phase takes every ready socket one stage
 * further (a TCP stream: accept, then its bytes up to a short read, then its end; a UDP socket: at most 32
 * datagrams), so the answer waits at least SYNC_TURNS turns, each ended by a check phase (setImmediate), and
 * goes on while the last turn still logged something (a full receive queue takes several turns to drain).
 * Not covered: a stream whose peer is still alive and silent (it is logged at its idle timeout).
 */
function syncAfterPending(id: string, loggedCount: () => number, print: (line: LabServerLine) => void): void {
  let turns = 0;
  let last = loggedCount();
  const turn = (): void => {
    turns += 1;
    const now = loggedCount();
    const quiet = now === last;
    last = now;
    if (turns >= SYNC_MAX_TURNS || (turns >= SYNC_TURNS && quiet)) print({ type: 'synced', id });
    else setImmediate(turn);
  };
  setImmediate(turn);
}

/** The process entry: argv[2] is the JSON config; stdout gets one JSON line per LabServerLine. */
async function main(argv: readonly string[]): Promise<void> {
  const print = (line: LabServerLine): void => {
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  const fail = (error: unknown, exitCode: number): void => {
    const code = error instanceof DecoyError ? error.code : error instanceof SyntaxError ? 'CONFIG_INVALID' : 'INTERNAL';
    print({ type: 'error', code, message: error instanceof Error ? error.message : String(error) });
    process.exitCode = exitCode;
  };

  let config: LabConfig;
  try {
    config = parseLabConfig(JSON.parse(argv[0] ?? ''));
  } catch (error) {
    fail(error, 2);
    return;
  }
  const log = new DecoyLog({ maxEvents: config.maxEvents });
  // Events that arrive while later listeners are still starting wait for the ready line.
  let early: DecoyEvent[] | undefined = [];
  let loggedCount = 0;
  log.on('event', (event) => {
    loggedCount += 1;
    if (early !== undefined) early.push(event);
    else print({ type: 'event', event });
  });

  let services: LabServices;
  try {
    services = await startLabServices(config, { log });
  } catch (error) {
    fail(error, 1);
    return;
  }

  let stopping = false;
  const shutdown = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      process.off('SIGTERM', onSigterm);
      process.off('SIGINT', onSigint);
      process.stdin.off('end', onStdinEnd);
      process.stdin.destroy();
      await services.close();
      print({ type: 'stopped', reason, events: log.events().length + log.dropped, dropped: log.dropped });
      // Watchdog: if some handle still keeps the loop alive, leave anyway.
      setTimeout(() => process.exit(process.exitCode ?? 0), 3000).unref();
    })();
  };
  const onSigterm = (): void => shutdown('SIGTERM');
  const onSigint = (): void => shutdown('SIGINT');
  // The parent holds our stdin: when it goes away, so do we.
  const onStdinEnd = (): void => shutdown('stdin closed');
  process.on('SIGTERM', onSigterm);
  process.on('SIGINT', onSigint);
  process.stdin.on('end', onStdinEnd);
  process.stdin.on('error', onStdinEnd);
  process.stdout.on('error', () => shutdown('stdout closed'));
  createInterface({ input: process.stdin }).on('line', (line) => {
    let cmd: LabServerCommand;
    try {
      cmd = JSON.parse(line) as LabServerCommand;
    } catch {
      return;
    }
    if (cmd.type === 'witness-query') sendWitnessQuery(cmd, print);
    else if (cmd.type === 'sync' && typeof cmd.id === 'string') syncAfterPending(cmd.id.slice(0, 64), () => loggedCount, print);
  });

  print({ type: 'ready', pid: process.pid, listeners: services.listeners });
  for (const event of early) print({ type: 'event', event });
  early = undefined;
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isMainModule()) {
  void main(process.argv.slice(2));
}
