import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { CANARY_PREFIX } from './canaries.js';

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

// Bounded lifetime even if the harness dies without stopping it.
const DECOY_PROCESS_MAX_SECONDS = 4 * 3600;

export async function startHostDecoys(opts: { scratchDir: string; runMarker: Record<string, string> }): Promise<HostDecoys> {
  const processCanary = `${CANARY_PREFIX}PROC${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const script = `import os, time\nsecret = os.environ.pop("SANDCHECK_DECOY_SECRET")\nheld = [secret * 1]\ntime.sleep(${DECOY_PROCESS_MAX_SECONDS})\n`;
  const child: ChildProcess = spawn('python3', ['-c', script], {
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
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketDir, { recursive: true, force: true });
    },
  };
}
