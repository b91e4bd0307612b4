import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { checkWatchDaemons } from '../../harness/watch-daemon.js';

let dir: string;
const servers: Server[] = [];
const requests: string[] = [];

/** An HTTP server on a Unix socket that records every request and answers with these headers. */
async function fakeDaemon(name: string, headers: Record<string, string>): Promise<string> {
  const path = join(dir, name);
  const server = createServer((req, res) => {
    requests.push(`${name} ${req.method ?? ''} ${req.url ?? ''}`);
    res.writeHead(200, headers).end('OK');
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(path, ok));
  return path;
}

async function refusal(paths: string[]): Promise<SandcheckError> {
  const err = await checkWatchDaemons(paths, 1000).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof SandcheckError)) throw new Error(`not refused: ${String(err)}`);
  return err;
}

describe('checkWatchDaemons (--watch-daemon)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandcheck-watch-'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts a socket that answers /_ping like a container daemon, once per path, and only pings it', async () => {
    const sock = await fakeDaemon('docker.sock', { 'Api-Version': '1.47', Server: 'Docker/27.5.1 (linux)' });
    expect(await checkWatchDaemons([sock, join(dir, '.', 'docker.sock')])).toEqual([{ socket: sock, apiVersion: '1.47', server: 'Docker/27.5.1 (linux)' }]);
    expect(requests).toEqual(['docker.sock GET /_ping']);
  });

  it('refuses an HTTP server that is not a container daemon, naming the first bad path given', async () => {
    const web = await fakeDaemon('web.sock', {});
    const err = await refusal([web, join(dir, 'missing.sock')]);
    expect(err.code).toBe('WATCH_DAEMON_INVALID');
    expect(err.isUsage).toBe(true);
    expect(err.message).toBe(`--watch-daemon ${web}: GET /_ping answered HTTP 200 without an Api-Version header: not a container daemon`);
  });

  it('refuses more sockets than a card records', async () => {
    const err = await refusal(Array.from({ length: 17 }, (_, i) => join(dir, `d${i}.sock`)));
    expect(err.message).toMatch(/17 sockets, at most 16/);
  });
});
