import { stat } from 'node:fs/promises';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { visibleLine } from '../core/clean-text.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import { WATCH_DAEMON_MAX, type WatchedDaemon } from '../model/scorecard.js';

/** How long a watched daemon may take to answer /_ping before the run is refused. */
export const WATCH_DAEMON_PING_MS = 3000;

const refuse = (socket: string, why: string): SandcheckError =>
  new SandcheckError('WATCH_DAEMON_INVALID', `--watch-daemon ${socket}: ${why}`, {
    hint: 'give the Unix socket of a running Docker or Podman daemon (e.g. /var/run/docker.sock), one the run may read the event log of; or leave --watch-daemon out',
  });

/** `GET /_ping` on the socket: the status and the daemon's Server and Api-Version headers. Reads only. */
function ping(socketPath: string, timeoutMs: number): Promise<{ status: number; server?: string; apiVersion?: string }> {
  return new Promise((done, fail) => {
    const req = request({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      const header = (name: string): string | undefined => {
        const v = res.headers[name];
        return typeof v === 'string' ? visibleLine(v).slice(0, 128) : undefined;
      };
      const server = header('server');
      const apiVersion = header('api-version');
      res.on('end', () => done({ status: res.statusCode ?? 0, ...(server ? { server } : {}), ...(apiVersion ? { apiVersion } : {}) }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', fail);
    req.end();
  });
}

/**
 * `--watch-daemon`: each path must be a Unix socket whose daemon answers `/_ping` like a container
 * daemon (an Api-Version header) in time; otherwise nothing runs. The harness only ever reads these
 * daemons (this ping, then their event logs).
 */
export async function checkWatchDaemons(paths: readonly string[], timeoutMs = WATCH_DAEMON_PING_MS): Promise<WatchedDaemon[]> {
  const unique = [...new Set(paths.map((p) => resolve(p)))];
  if (unique.length > WATCH_DAEMON_MAX) {
    throw new SandcheckError('WATCH_DAEMON_INVALID', `--watch-daemon: ${unique.length} sockets, at most ${WATCH_DAEMON_MAX}`, {
      hint: 'watch the daemons the boxes can actually be handed',
    });
  }
  const checked = await Promise.allSettled(
    unique.map(async (socket): Promise<WatchedDaemon> => {
      let st;
      try {
        st = await stat(socket);
      } catch (err) {
        throw refuse(socket, `cannot stat it (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`);
      }
      if (!st.isSocket()) throw refuse(socket, 'not a Unix socket');
      let got;
      try {
        got = await ping(socket, timeoutMs);
      } catch (err) {
        throw refuse(socket, `the daemon did not answer GET /_ping: ${errorMessage(err)}`);
      }
      if (got.status !== 200 || got.apiVersion === undefined)
        throw refuse(
          socket,
          `GET /_ping answered HTTP ${got.status}${got.apiVersion === undefined ? ' without an Api-Version header' : ''}: not a container daemon`,
        );
      return { socket, apiVersion: got.apiVersion, ...(got.server ? { server: got.server } : {}) };
    }),
  );
  // Checked at once, refused in the order given: the first bad path is the one the error names.
  const failed = checked.find((c) => c.status === 'rejected');
  if (failed) throw failed.reason;
  return checked.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []));
}
