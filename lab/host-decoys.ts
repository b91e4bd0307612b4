import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { CANARY_PREFIX, newCanary } from './canaries.js';
import { invalidateKeys } from './keyring.js';
import { processStartTime, type OwnershipJournal } from '../core/ownership-journal.js';

export type HostDecoyKind = 'daemon-socket' | 'agent-socket' | 'abstract-socket';

export interface SocketContact {
  decoy: HostDecoyKind;
  time: string;
  /** First bytes the client sent (≤ 256), as text. */
  firstBytes: string;
}

export interface HostDecoys {
  /** A host process holding a canary in its environment and memory: the ptrace / environ target. */
  processPid: number;
  processCanary: string;
  /** A Unix socket shaped like a container daemon socket, accepting any uid; any connection is logged. */
  socketPath: string;
  /** An SSH-agent-shaped socket where such sockets live (a /tmp-like dir: ssh-XXXX/agent.N), accepting any uid. */
  agentSocketPath: string;
  /** Its inode: a refusal seen in the box at the host path counts only at this socket. */
  agentSocketInode: number;
  agentCanary: string;
  /** An abstract socket name (no leading NUL) in the lab's network namespace; absent without a lab. */
  abstractName?: string;
  abstractCanary?: string;
  /** Why there is no abstract decoy although the run has a lab. */
  abstractUnavailable?: string;
  /** The decoy process's keys: descriptions and canaries; `keyringUnavailable` says why there are none. */
  keys: { description: string; canary: string; ring: 'session' | 'user' }[];
  keyringUnavailable?: string;
  contacts(): SocketContact[];
  /** Why the decoy process is not the one started (it exited; its pid is another process's now), or undefined while it runs. */
  processGone(): string | undefined;
  stop(): Promise<void>;
}

// An upper bound even if both ways of noticing the harness's death below fail.
const DECOY_PROCESS_MAX_SECONDS = 4 * 3600;

/**
 * The decoys die with the harness: the kernel's parent-death signal (prctl PR_SET_PDEATHSIG = 1) and a
 * once-a-second check of the parent pid for the case where the parent died before prctl ran. SIGTERM, so
 * the decoy process can still invalidate its user-keyring key, which would otherwise outlive it.
 */
const DIES_WITH_PARENT = [
  'import ctypes, os, signal, sys, time',
  'parent = int(sys.argv[1])',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'try:',
  '    libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)',
  'except Exception:',
  '    pass',
  `end = time.monotonic() + ${DECOY_PROCESS_MAX_SECONDS}`,
];
/**
 * The decoy process: a canary in its environment and memory (the ptrace / environ target) and two keys in
 * the kernel keyring (the keyring target). One key sits in a session keyring of its own, readable by any uid
 * that learns its serial (/proc/keys lists it to every process of the host's user namespace); the other sits
 * in the user keyring of the harness's uid, which the kernel shares with every process of that uid in the
 * host's user namespace (a container's root without a user namespace). The user-keyring key outlives the
 * process, so SIGTERM invalidates it and a kernel timeout (the decoy's own ceiling) backs that up.
 * Prints `READY keyring=ok` or `READY keyring=<why not>` when it was given a run (SANDCHECK_DECOY_RUN).
 */
export const DECOY_SCRIPT = [
  ...DIES_WITH_PARENT,
  'import platform',
  'secret = os.environ.pop("SANDCHECK_DECOY_SECRET")',
  'session_value = os.environ.pop("SANDCHECK_DECOY_KEY_SESSION", "")',
  'user_value = os.environ.pop("SANDCHECK_DECOY_KEY_USER", "")',
  'run = os.environ.pop("SANDCHECK_DECOY_RUN", "")',
  'held = [secret * 1]',
  'NR = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine())',
  'libc.syscall.restype = ctypes.c_long',
  'def keyctl(*a):',
  '    r = libc.syscall(ctypes.c_long(NR[1]), *[ctypes.c_long(x) if isinstance(x, int) else x for x in a])',
  '    if r < 0:',
  '        e = ctypes.get_errno()',
  '        raise OSError(e, os.strerror(e))',
  '    return r',
  'def add_key(desc, value, ring):',
  '    r = libc.syscall(ctypes.c_long(NR[0]), b"user", desc.encode(), value.encode(), ctypes.c_size_t(len(value)), ctypes.c_long(ring))',
  '    if r < 0:',
  '        e = ctypes.get_errno()',
  '        raise OSError(e, os.strerror(e))',
  '    return r',
  'user_key = None',
  'def stop(*_):',
  '    if user_key is not None:',
  '        try:',
  '            keyctl(21, user_key)', // KEYCTL_INVALIDATE
  '        except OSError:',
  '            pass',
  '    os._exit(0)',
  'signal.signal(signal.SIGTERM, stop)',
  'status = "ok"',
  'try:',
  '    if not run:',
  '        raise OSError(0, "no run")',
  '    if NR is None:',
  '        raise OSError(0, "no keyctl syscall numbers for %s" % platform.machine())',
  // The user key first, while the user keyring is still possessed (through the user-session keyring):
  // timeout and permissions need possession. Then a session keyring of the decoy's own.
  '    user_key = add_key("sandcheck-decoy:%s:user" % run, user_value, -4)',
  '    keyctl(15, user_key, ' + String(4 * 3600) + ')', // KEYCTL_SET_TIMEOUT
  '    keyctl(5, user_key, 0x3f0b0000)', // possessor all; the uid view+read+search (search lets stop() invalidate it)
  '    keyctl(1, ("sandcheck-decoy-%s" % run).encode())', // KEYCTL_JOIN_SESSION_KEYRING
  '    k = add_key("sandcheck-decoy:%s:session" % run, session_value, -3)',
  '    keyctl(5, k, 0x3f0b0b0b)', // KEYCTL_SETPERM: possessor all; user, group, other view+read+search
  'except OSError as e:',
  '    status = "keyctl refused: %s" % (e.strerror or e)',
  'if run:',
  '    print("READY keyring=%s" % status, flush=True)',
  'while os.getppid() == parent and time.monotonic() < end:',
  '    time.sleep(1)',
  'stop()',
  '',
].join('\n');

/**
 * A listener on an abstract Unix socket (argv: parent pid, name without the leading NUL, canary), run in the
 * lab's network namespace: abstract names belong to a network namespace, so only a box sharing it can
 * connect. Logs `CONTACT <base64 of the first 256 bytes>` per connection and answers with the canary.
 */
export const ABSTRACT_DECOY_SCRIPT = [
  ...DIES_WITH_PARENT,
  'import base64, select, socket',
  'name, canary = sys.argv[2], sys.argv[3]',
  's = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)',
  's.bind("\\0" + name)',
  's.listen(16)',
  'print("READY", flush=True)',
  'while os.getppid() == parent and time.monotonic() < end:',
  '    ready, _, _ = select.select([s], [], [], 1.0)',
  '    if not ready:',
  '        continue',
  '    try:',
  '        conn, _ = s.accept()',
  '        conn.settimeout(1.0)',
  '        data = b""',
  '        try:',
  '            data = conn.recv(256)',
  '        except OSError:',
  '            pass',
  '        print("CONTACT %s" % base64.b64encode(data).decode(), flush=True)',
  '        conn.sendall(("HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n%s\\n" % canary).encode())',
  '        conn.close()',
  '    except OSError:',
  '        pass',
  '',
].join('\n');

/** Resolves with the child's first stdout line (or rejects when it exits or stays silent for `ms`). */
function firstLine(child: ChildProcess, ms: number, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not report ready within ${ms} ms`)), ms);
    const onData = (d: Buffer): void => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      resolve(buf.slice(0, nl));
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before it was ready`));
    });
  });
}

async function listenUnix(server: Server, path: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  // Any uid that reaches the place may connect, like a socket in a group the box shares.
  await chmod(path, 0o666);
}

function recordContacts(decoy: HostDecoyKind, contacts: SocketContact[], answer: (sock: Socket, received: Buffer) => void): Server {
  const server = createServer((sock) => {
    const contact: SocketContact = { decoy, time: new Date().toISOString(), firstBytes: '' };
    contacts.push(contact);
    let received = Buffer.alloc(0);
    sock.setTimeout(1000, () => sock.destroy());
    sock.on('data', (d: Buffer) => {
      if (contact.firstBytes.length < 256) contact.firstBytes += d.toString('latin1').slice(0, 256 - contact.firstBytes.length);
      received = Buffer.concat([received, d]).subarray(0, 4096);
      answer(sock, received);
    });
    sock.on('error', () => undefined);
  });
  server.maxConnections = 64;
  return server;
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const sshString = (b: Buffer): Buffer => Buffer.concat([u32(b.length), b]);

/**
 * The SSH agent protocol, just enough: REQUEST_IDENTITIES (11) gets one ed25519 identity whose comment is
 * the canary; anything else (an extension request naming the nonce, say) gets FAILURE (5).
 */
function agentAnswer(canary: string): (sock: Socket, received: Buffer) => void {
  let answered = 0;
  return (sock, received) => {
    // `received` holds everything so far: answer each complete message once, in order.
    let count = 0;
    for (let offset = 0; offset + 5 <= received.length;) {
      const len = received.readUInt32BE(offset);
      if (offset + 4 + len > received.length) break;
      count += 1;
      if (count > answered) {
        answered = count;
        if (received[offset + 4] === 11) {
          const blob = Buffer.concat([sshString(Buffer.from('ssh-ed25519')), sshString(randomBytes(32))]);
          const body = Buffer.concat([Buffer.from([12]), u32(1), sshString(blob), sshString(Buffer.from(canary))]);
          sock.write(Buffer.concat([u32(body.length), body]));
        } else {
          sock.write(Buffer.concat([u32(1), Buffer.from([5])]));
        }
      }
      offset += 4 + len;
    }
  };
}

export async function startHostDecoys(opts: {
  scratchDir: string;
  runId: string;
  runMarker: Record<string, string>;
  /** The lab's network namespace: the abstract-socket decoy listens there (none without a lab). */
  labNetnsPath?: string;
  journal?: OwnershipJournal;
}): Promise<HostDecoys> {
  const processCanary = `${CANARY_PREFIX}PROC${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const keys = [
    { description: `sandcheck-decoy:${opts.runId}:session`, canary: newCanary('KEYSES'), ring: 'session' as const },
    { description: `sandcheck-decoy:${opts.runId}:user`, canary: newCanary('KEYUSR'), ring: 'user' as const },
  ];
  // Recorded before the decoy adds them: the user-keyring key would outlive a decoy that dies unsignalled.
  const ownedKeys = keys.map((k) => ({ kind: 'key' as const, description: k.description }));
  for (const k of ownedKeys) opts.journal?.own(k);
  const child: ChildProcess = spawn('python3', ['-c', DECOY_SCRIPT, String(process.pid)], {
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      SANDCHECK_DECOY_SECRET: processCanary,
      SANDCHECK_DECOY_RUN: opts.runId,
      SANDCHECK_DECOY_KEY_SESSION: keys[0]?.canary ?? '',
      SANDCHECK_DECOY_KEY_USER: keys[1]?.canary ?? '',
      ...opts.runMarker,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
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
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = `the host decoy process (pid ${pid}) exited (${signal ?? `code ${code}`})`;
      resolve();
    }),
  );
  const startTime = processStartTime(pid);
  const stopProcess = async (): Promise<void> => {
    // SIGTERM first: the decoy invalidates its user-keyring key, which would outlive it.
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const killer = setTimeout(() => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 2000);
    await exited;
    clearTimeout(killer);
    if (owned) opts.journal?.release(owned);
    // The kernel drops a dead session keyring's key asynchronously, and a decoy killed unsignalled leaves its
    // user key: the harness invalidates what is still listed and waits (bounded) until the keyring shows none.
    const left = await invalidateKeys(`sandcheck-decoy:${opts.runId}:`);
    for (const k of ownedKeys) if (!left.includes(k.description)) opts.journal?.release(k);
  };
  const contacts: SocketContact[] = [];
  const servers: Server[] = [];
  let abstract: { child: ChildProcess; exited: Promise<void>; owned: ReturnType<OwnershipJournal['ownProcess']> } | undefined;
  const dirs = [join(opts.scratchDir, 'decoy-run'), join(opts.scratchDir, 'decoy-tmp')];
  const stopAll = async (): Promise<void> => {
    await stopProcess();
    if (abstract) {
      try {
        abstract.child.kill('SIGKILL');
      } catch {
        // already gone
      }
      await abstract.exited;
      if (abstract.owned) opts.journal?.release(abstract.owned);
    }
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  };
  const startAbstractDecoy = async (netnsPath: string, name: string, value: string): Promise<void> => {
    const a = spawn('nsenter', [`--net=${netnsPath}`, '--', 'python3', '-c', ABSTRACT_DECOY_SCRIPT, String(process.pid), name, value], {
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...opts.runMarker },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const aExited = new Promise<void>((resolve) => a.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      a.once('spawn', resolve);
      a.once('error', reject);
    });
    abstract = { child: a, exited: aExited, owned: a.pid !== undefined ? opts.journal?.ownProcess(a.pid, 'abstract socket decoy') : undefined };
    await firstLine(a, 10_000, 'the abstract socket decoy');
    let buf = '';
    a.stdout?.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = /^CONTACT (\S*)$/.exec(line);
        if (m) contacts.push({ decoy: 'abstract-socket', time: new Date().toISOString(), firstBytes: Buffer.from(m[1] ?? '', 'base64').toString('latin1') });
      }
    });
  };
  try {
    const ready = await firstLine(child, 10_000, 'the decoy process');
    const keyring = /^READY keyring=(.*)$/.exec(ready)?.[1] ?? `unexpected ready line: ${ready.slice(0, 80)}`;

    // Decoy sockets in host-like places (a /run-like and a /tmp-like directory), each directory 0755.
    for (const d of dirs) {
      await mkdir(d, { mode: 0o755 });
      await chmod(d, 0o755);
    }
    const socketPath = join(dirs[0] ?? '', 'docker.sock');
    const daemon = recordContacts('daemon-socket', contacts, (sock) => sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'));
    servers.push(daemon);
    await listenUnix(daemon, socketPath);
    const agentDir = join(dirs[1] ?? '', `ssh-${randomBytes(5).toString('hex')}`);
    await mkdir(agentDir, { mode: 0o755 });
    await chmod(agentDir, 0o755);
    const agentSocketPath = join(agentDir, `agent.${1000 + (randomBytes(2).readUInt16BE() % 60_000)}`);
    const agentCanary = newCanary('AGENT');
    const agent = recordContacts('agent-socket', contacts, agentAnswer(agentCanary));
    servers.push(agent);
    await listenUnix(agent, agentSocketPath);
    const agentSocketInode = (await lstat(agentSocketPath)).ino;

    let abstractName: string | undefined;
    let abstractCanary: string | undefined;
    let abstractUnavailable: string | undefined;
    if (opts.labNetnsPath) {
      // The name a containerd shim used (CVE-2020-15257): reachable from any box sharing the network namespace.
      const name = `/containerd-shim/sandcheck-${opts.runId}-${randomBytes(4).toString('hex')}.sock`;
      const value = newCanary('ABSTRACT');
      try {
        await startAbstractDecoy(opts.labNetnsPath, name, value);
        abstractName = name;
        abstractCanary = value;
      } catch (err) {
        // Not fatal: the abstract-socket probe becomes not-applicable with this reason.
        abstract?.child.kill('SIGKILL');
        abstractUnavailable = `the abstract socket decoy did not start in the lab namespace: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    return {
      processPid: pid,
      processCanary,
      socketPath,
      agentSocketPath,
      agentSocketInode,
      agentCanary,
      ...(abstractName !== undefined && abstractCanary !== undefined ? { abstractName, abstractCanary } : {}),
      ...(abstractUnavailable !== undefined ? { abstractUnavailable } : {}),
      keys: keyring === 'ok' ? keys : [],
      ...(keyring === 'ok' ? {} : { keyringUnavailable: keyring }),
      contacts: () => [...contacts],
      processGone: () =>
        exit ?? (startTime !== undefined && processStartTime(pid) === startTime ? undefined : `the host decoy process (pid ${pid}) is no longer running`),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
