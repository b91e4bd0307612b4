import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants as fsc, type Stats } from 'node:fs';
import { chmod, link, lstat, open, type FileHandle } from 'node:fs/promises';
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import {
  inodeIdentity,
  openOwnershipJournal,
  readBootIdSync,
  removeOwnedPath,
  resourceKey,
  type OwnedPath,
  type OwnedResource,
} from '../../core/ownership-journal.js';
import { packageRoot } from '../../core/paths.js';
import { openLab, probeLabSupport, type LabSession } from '../lab-session.js';
import { WITNESS_PROTOCOL_VERSION, WitnessStateSchema, type WitnessInfo, type WitnessState } from './protocol.js';

export interface ServeWitnessOptions {
  /** `unix:/path/to.sock` (default /run/sandcheck/witness-<id>.sock) or `http://HOST:PORT`. */
  listen?: string;
  /** Where to write url, token and pid (mode 0600), for `sandcheck run --witness FILE`: a path that does not exist yet. */
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

/** Only `Authorization: Bearer <token>` (the scheme name is case-insensitive, RFC 7235): a bare token is refused. */
export function bearerAuthorized(header: string | undefined, token: string): boolean {
  const m = /^Bearer ([\x21-\x7e]+)$/i.exec(header ?? '');
  if (!m?.[1]) return false;
  const given = Buffer.from(m[1]);
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** What the HTTP API answers from: the witness's lab (a stand-in in tests). */
export interface WitnessApi extends Pick<LabSession, 'proveWitness' | 'trafficBetween'> {
  info(): WitnessInfo;
}

/** The witness's HTTP API: every request must carry the bearer token, else 401 before anything is read. */
export function witnessRequestListener(token: string, api: WitnessApi): RequestListener {
  return (req, res) => {
    void (async () => {
      if (!bearerAuthorized(req.headers.authorization, token))
        return send(res, 401, { error: 'a bearer token is required: Authorization: Bearer <token> (the witness state file holds it)' });
      const url = new URL(req.url ?? '/', 'http://witness');
      if (req.method === 'GET' && url.pathname === '/v1/info') return send(res, 200, api.info());
      if (req.method === 'POST' && url.pathname === '/v1/prove') return send(res, 200, await api.proveWitness());
      if (req.method === 'GET' && url.pathname === '/v1/traffic') {
        const from = Number(url.searchParams.get('from'));
        const to = Number(url.searchParams.get('to'));
        if (!Number.isFinite(from) || !Number.isFinite(to) || to < from || to - from > MAX_WINDOW_MS)
          return send(res, 400, { error: 'from and to: ms since epoch, from ≤ to, at most a day apart' });
        // `open=1`: the window stays open until the decoys logged what reached them before this request (a witness
        // of the first protocol ignores it and ends the window at `to`).
        return send(res, 200, await api.trafficBetween(from, url.searchParams.get('open') === '1' ? undefined : to));
      }
      return send(res, 404, { error: `no ${req.method ?? ''} ${url.pathname}` });
    })().catch((err: unknown) => send(res, 500, { error: errorMessage(err) }));
  };
}

/**
 * Something already at a path the witness would create (its state file, its socket) is refused, never replaced or
 * followed: before anything is started, so a refusal leaves nothing behind. Only the type is named, never the content.
 */
async function refuseExisting(path: string, label: string): Promise<void> {
  let st: Stats | undefined;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new SandcheckError('USAGE', `${label}: cannot be checked: ${errorMessage(err)}`);
  }
  const type = st.isSymbolicLink() ? 'a symlink' : st.isSocket() ? 'a socket' : st.isDirectory() ? 'a directory' : st.isFile() ? 'a file' : 'a special file';
  throw new SandcheckError(
    'USAGE',
    `${label} already exists (${type}): remove it or choose another path; the witness only writes to a path it creates itself`,
    {
      hint: 'a socket or state file a killed witness left is removed by `sandcheck clean`',
    },
  );
}

/**
 * `sandcheck witness serve`: the lab's outside world on its own — a network namespace with decoys on
 * every address, the decoy services and the packet capture — kept up for runs whose boxes live where
 * they can reach it (another machine routes its metadata, documentation-range and DNS traffic here).
 * Runs ask over HTTP for the decoy credentials, proofs of life and the traffic of their windows.
 */
export async function serveWitness(options: ServeWitnessOptions = {}): Promise<ServedWitness> {
  const witnessId = `w${randomBytes(5).toString('hex')}`;
  const token = options.token ?? randomBytes(24).toString('hex');
  if (!WitnessStateSchema.shape.token.safeParse(token).success)
    throw new SandcheckError('USAGE', 'the witness token must be 16 to 128 visible ASCII characters');
  const listen = options.listen ?? `unix:/run/sandcheck/witness-${witnessId}.sock`;
  const where = parseListen(listen);
  const stateFile = options.stateFile === undefined ? undefined : resolvePath(options.stateFile);
  // Refusals first, while nothing (journal, lab, temp file) exists yet.
  if (stateFile) await refuseExisting(stateFile, `--state ${stateFile}`);
  if ('socketPath' in where) await refuseExisting(where.socketPath, `--listen ${listen}`);
  const support = await probeLabSupport();
  if (!support.available) throw new SandcheckError('LAB_UNAVAILABLE', `the witness needs a lab here: ${support.reason}`, { hint: support.hint });

  const journal = openOwnershipJournal(witnessId);
  // What to undo, run newest first when the start fails part way or when the witness stops.
  const undo: { what: string; run: () => Promise<string[]> }[] = [];
  const unwind = async (): Promise<string[]> => {
    const leftovers: string[] = [];
    for (const u of undo.splice(0).reverse()) {
      try {
        leftovers.push(...(await u.run()));
      } catch (err) {
        leftovers.push(`${u.what}: ${errorMessage(err)}`);
      }
    }
    if (leftovers.length === 0) journal.close();
    return leftovers;
  };
  /** Journals a socket or file (before it exists, or by inode right after); the returned drop removes it if still ours. */
  const ownPath = (r: OwnedPath): (() => void) => {
    journal.own(r);
    let dropped = false;
    const drop = (): void => {
      if (dropped) return;
      dropped = true;
      removeOwnedPath(r);
      journal.release(r);
    };
    undo.push({ what: resourceKey(r), run: async () => (drop(), []) });
    return drop;
  };
  const fail = async (err: unknown, code: 'USAGE' | 'LAB_SETUP_FAILED', what: string): Promise<never> => {
    const leftovers = await unwind();
    const tail = leftovers.length > 0 ? ` (left behind for \`sandcheck clean\`: ${leftovers.join('; ')})` : '';
    if (err instanceof SandcheckError) throw new SandcheckError(err.code, `${err.message}${tail}`, { cause: err, ...(err.hint ? { hint: err.hint } : {}) });
    throw new SandcheckError(code, `${what}: ${errorMessage(err)}${tail}`, { cause: err });
  };

  // The token goes into a temp file of our own (exclusive, never through a symlink, 0600) in the state file's
  // directory; once complete it is hard-linked to the state path, which fails if anything appeared there since the
  // check above. So the state file is never one someone else made, and no reader sees it half written.
  let stateTemp: { file: FileHandle; path: string; drop: () => void } | undefined;
  if (stateFile) {
    const path = join(dirname(stateFile), `.sandcheck-witness-${witnessId}.tmp`);
    const drop = ownPath({ kind: 'file', path });
    let file: FileHandle;
    try {
      file = await open(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    } catch (err) {
      return fail(err, 'USAGE', `--state ${stateFile}: cannot create a file in its directory`);
    }
    undo.push({ what: 'temp state file handle', run: async () => (await file.close().catch(() => undefined), []) });
    stateTemp = { file, path, drop };
  }

  const labNs: OwnedResource = { kind: 'netns', name: `sc-${witnessId}` };
  journal.own(labNs);
  let lab: LabSession;
  try {
    lab = await openLab(witnessId, packageRoot());
  } catch (err) {
    journal.release(labNs);
    return fail(err, 'LAB_SETUP_FAILED', "the witness's lab could not start");
  }
  undo.push({
    what: 'lab',
    run: async () => {
      const closed = await lab.close();
      if (closed.leftovers.length === 0) journal.release(labNs);
      return closed.leftovers;
    },
  });
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

  const server: Server = createServer(
    witnessRequestListener(token, { info, proveWitness: () => lab.proveWitness(), trafficBetween: (from, to) => lab.trafficBetween(from, to) }),
  );
  const socketPath = 'socketPath' in where ? resolvePath(where.socketPath) : undefined;
  let dropSocket: (() => void) | undefined;
  // Stops the server before its socket goes (closing also unlinks a bound socket; the drop then finds it gone).
  undo.push({
    what: 'server',
    run: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      dropSocket?.();
      return [];
    },
  });
  try {
    // The default path carries the witness id: provably ours by name, so recorded before the socket exists.
    if (socketPath && socketPath.split('/').some((part) => part.includes(witnessId))) dropSocket = ownPath({ kind: 'socket', path: socketPath });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if ('socketPath' in where) server.listen(where.socketPath, resolve);
      else server.listen(where.port, where.host, resolve);
    });
    if (socketPath) {
      await chmod(socketPath, 0o600);
      // Any path (a --listen the user chose): ours by inode and ctime, recorded right after bind and chmod.
      const st = await lstat(socketPath, { bigint: true });
      if (!st.isSocket()) throw new Error(`${socketPath} is no longer the socket just bound`);
      dropSocket = ownPath({ kind: 'socket', path: socketPath, inode: { ...inodeIdentity(st), ctimeNs: st.ctimeNs.toString() } });
    }
  } catch (err) {
    return fail(err, 'USAGE', `the witness cannot listen on ${listen}`);
  }
  const address = server.address();
  const url =
    'socketPath' in where
      ? `unix:${where.socketPath}`
      : `http://${where.host.includes(':') ? `[${where.host}]` : where.host}:${typeof address === 'object' && address ? address.port : where.port}`;
  const state: WitnessState = { url, token, witnessId, pid: process.pid };
  if (stateFile && stateTemp) {
    const text = `${JSON.stringify(state, null, 2)}\n`;
    try {
      await stateTemp.file.writeFile(text);
      await stateTemp.file.sync();
      const st = await stateTemp.file.stat({ bigint: true });
      await stateTemp.file.close();
      // A hard link keeps the inode: the state file is journalled by inode and content hash before it appears.
      ownPath({ kind: 'file', path: stateFile, inode: inodeIdentity(st), sha256: createHash('sha256').update(text).digest('hex') });
      await link(stateTemp.path, stateFile);
      stateTemp.drop();
    } catch (err) {
      const why =
        (err as NodeJS.ErrnoException).code === 'EEXIST'
          ? new SandcheckError('USAGE', `--state ${stateFile} appeared while the witness started: it was left as it is; remove it or choose another path`)
          : err;
      return fail(why, 'USAGE', `--state ${stateFile}: cannot be written`);
    }
  }
  options.onNotice?.(`witness ${witnessId} serving on ${url} (lab ${lab.handle.netnsPath})${stateFile ? `; state in ${stateFile}` : ''}`);

  let closing: Promise<{ leftovers: string[] }> | undefined;
  return {
    state,
    info,
    close: () => (closing ??= unwind().then((leftovers) => ({ leftovers }))),
  };
}
