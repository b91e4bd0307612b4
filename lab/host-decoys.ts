import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { CANARY_PREFIX } from './canaries.js';
import type { OwnershipJournal } from '../harness/ownership/journal.js';

export interface SocketContact {
  time: string;
  /** First bytes the client sent (≤ 256), as text. */
  firstBytes: string;
}

export interface HostDecoys {
  /** A host process holding a canary in its environment and memory: the ptrace / environ target. */
  processPid: number;
  processCanary: string;
  /** A Unix socket shaped like a container daemon socket; any connection is logged. */
  socketPath: string;
  contacts(): SocketContact[];
  stop(): Promise<void>;
}

// An upper bound even if both ways of noticing the harness's death below fail.
const DECOY_PROCESS_MAX_SECONDS = 4 * 3600;

/**
 * The decoy dies with the harness: the kernel's parent-death signal (prctl PR_SET_PDEATHSIG = 1, SIGKILL),
 * and a once-a-second check of its parent pid for the case where the parent died before prctl ran.
 */
export const DECOY_SCRIPT = [
  'import ctypes, os, signal, sys, time',
  'parent = int(sys.argv[1])',
  'try:',
  '    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)',
  'except Exception:',
  '    pass',
  'secret = os.environ.pop("SANDCHECK_DECOY_SECRET")',
  'held = [secret * 1]',
  `end = time.monotonic() + ${DECOY_PROCESS_MAX_SECONDS}`,
  'while os.getppid() == parent and time.monotonic() < end:',
  '    time.sleep(1)',
  '',
].join('\n');

export async function startHostDecoys(opts: { scratchDir: string; runMarker: Record<string, string>; journal?: OwnershipJournal }): Promise<HostDecoys> {
  const processCanary = `${CANARY_PREFIX}PROC${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const child: ChildProcess = spawn('python3', ['-c', DECOY_SCRIPT, String(process.pid)], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', SANDCHECK_DECOY_SECRET: processCanary, ...opts.runMarker },
    stdio: 'ignore',
    detached: true,
  });
  child.unref();
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('decoy process did not start');
  const owned = opts.journal?.ownProcess(pid, 'decoy process');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const socketDir = join(opts.scratchDir, 'decoy-run');
  await mkdir(socketDir, { recursive: true });
  const socketPath = join(socketDir, 'docker.sock');
  const contacts: SocketContact[] = [];
  const server: Server = createServer((sock) => {
    const contact: SocketContact = { time: new Date().toISOString(), firstBytes: '' };
    contacts.push(contact);
    sock.setTimeout(1000, () => sock.destroy());
    sock.on('data', (d: Buffer) => {
      if (contact.firstBytes.length < 256) contact.firstBytes += d.toString('utf8').slice(0, 256 - contact.firstBytes.length);
      sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    });
    sock.on('error', () => undefined);
  });
  server.maxConnections = 64;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });
  return {
    processPid: pid,
    processCanary,
    socketPath,
    contacts: () => [...contacts],
    async stop() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
      if (owned) opts.journal?.release(owned);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketDir, { recursive: true, force: true });
    },
  };
}
