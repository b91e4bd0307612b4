import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { SandcheckError, errorMessage } from '../../harness/errors.js';
import { openOwnershipJournal, readBootIdSync, type OwnedResource } from '../../harness/ownership/journal.js';
import { packageRoot } from '../../harness/paths.js';
import { openLab, probeLabSupport, type LabSession } from '../lab-session.js';
import { WITNESS_PROTOCOL_VERSION, type WitnessInfo, type WitnessState } from './protocol.js';

export interface ServeWitnessOptions {
  /** `unix:/path/to.sock` (default /run/sandcheck/witness-<id>.sock) or `http://HOST:PORT`. */
  listen?: string;
  /** Where to write url, token and pid (mode 0600), for `sandcheck run --witness FILE`. */
  stateFile?: string;
  /** The token clients must present; a random one when absent. */
  token?: string;
  onNotice?: (text: string) => void;
}

export interface ServedWitness {
  state: WitnessState;
  info(): WitnessInfo;
  close(): Promise<{ leftovers: string[] }>;
}

const MAX_WINDOW_MS = 24 * 3600 * 1000;

function parseListen(listen: string): { socketPath: string } | { host: string; port: number } {
  if (listen.startsWith('unix:')) return { socketPath: listen.slice('unix:'.length) };
  const m = /^http:\/\/([^/:]+|\[[0-9a-fA-F:]+\]):(\d{1,5})\/?$/.exec(listen);
  if (!m || Number(m[2]) > 65_535) throw new SandcheckError('USAGE', `--listen ${listen}: expected unix:/path/to.sock or http://HOST:PORT`);
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function authorized(req: IncomingMessage, token: string): boolean {
  const given = Buffer.from((req.headers.authorization ?? '').replace(/^Bearer /, ''));
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/**
 * `sandcheck witness serve`: the lab's outside world on its own — a network namespace with decoys on
 * every address, the decoy services and the packet capture — kept up for runs whose boxes live where
 * they can reach it (another machine routes its metadata, documentation-range and DNS traffic here).
 * Runs ask over HTTP for the decoy credentials, proofs of life and the traffic of their windows.
 */
export async function serveWitness(options: ServeWitnessOptions = {}): Promise<ServedWitness> {
  const support = await probeLabSupport();
  if (!support.available) throw new SandcheckError('LAB_UNAVAILABLE', `the witness needs a lab here: ${support.reason}`, { hint: support.hint });
  const witnessId = `w${randomBytes(5).toString('hex')}`;
  const token = options.token ?? randomBytes(24).toString('hex');
  const listen = options.listen ?? `unix:/run/sandcheck/witness-${witnessId}.sock`;
  const where = parseListen(listen);
  const journal = openOwnershipJournal(witnessId);
  const labNs: OwnedResource = { kind: 'netns', name: `sc-${witnessId}` };
  journal.own(labNs);
  let lab: LabSession;
  try {
    lab = await openLab(witnessId, packageRoot());
  } catch (err) {
    journal.release(labNs);
    throw new SandcheckError('LAB_SETUP_FAILED', `the witness's lab could not start: ${errorMessage(err)}`, { cause: err });
  }
  const bootId = readBootIdSync();
  const info = (): WitnessInfo => ({
    protocol: WITNESS_PROTOCOL_VERSION,
    witnessId,
    bootId,
    netnsPath: lab.handle.netnsPath,
    resolvConfPath: lab.handle.resolvConfPath,
    canaries: lab.canaries,
    nowMs: Date.now(),
  });

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (!authorized(req, token)) return send(res, 401, { error: 'a bearer token is required (the witness state file holds it)' });
      const url = new URL(req.url ?? '/', 'http://witness');
      if (req.method === 'GET' && url.pathname === '/v1/info') return send(res, 200, info());
      if (req.method === 'POST' && url.pathname === '/v1/prove') return send(res, 200, await lab.proveWitness());
      if (req.method === 'GET' && url.pathname === '/v1/traffic') {
        const from = Number(url.searchParams.get('from'));
        const to = Number(url.searchParams.get('to'));
        if (!Number.isFinite(from) || !Number.isFinite(to) || to < from || to - from > MAX_WINDOW_MS) return send(res, 400, { error: 'from and to: ms since epoch, from ≤ to, at most a day apart' });
        // `open=1`: the window stays open until the decoys logged what reached them before this request (a witness
        // of the first protocol ignores it and ends the window at `to`).
        return send(res, 200, await lab.trafficBetween(from, url.searchParams.get('open') === '1' ? undefined : to));
      }
      return send(res, 404, { error: `no ${req.method ?? ''} ${url.pathname}` });
    })().catch((err: unknown) => send(res, 500, { error: errorMessage(err) }));
  });
  try {
    if ('socketPath' in where) await rm(where.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if ('socketPath' in where) server.listen(where.socketPath, resolve);
      else server.listen(where.port, where.host, resolve);
    });
    if ('socketPath' in where) await chmod(where.socketPath, 0o600);
  } catch (err) {
    await lab.close().catch(() => undefined);
    journal.release(labNs);
    throw new SandcheckError('USAGE', `the witness cannot listen on ${listen}: ${errorMessage(err)}`, { cause: err });
  }
  const address = server.address();
  const url = 'socketPath' in where ? `unix:${where.socketPath}` : `http://${where.host.includes(':') ? `[${where.host}]` : where.host}:${typeof address === 'object' && address ? address.port : where.port}`;
  const state: WitnessState = { url, token, witnessId, pid: process.pid };
  if (options.stateFile) await writeFile(options.stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  options.onNotice?.(`witness ${witnessId} serving on ${url} (lab ${lab.handle.netnsPath})${options.stateFile ? `; state in ${options.stateFile}` : ''}`);

  let closing: Promise<{ leftovers: string[] }> | undefined;
  return {
    state,
    info,
    close: () =>
      (closing ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        if ('socketPath' in where) await rm(where.socketPath, { force: true });
        if (options.stateFile) await rm(options.stateFile, { force: true });
        const closed = await lab.close();
        if (closed.leftovers.length === 0) {
          journal.release(labNs);
          journal.close();
        }
        return { leftovers: closed.leftovers };
      })()),
  };
}
