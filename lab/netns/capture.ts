import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { nsenterArgv, type NetnsRef } from './enter.js';
import { LabError } from './errors.js';
import { onProcessExit } from './exit-hook.js';
import { parseTcpdumpLine, type Packet } from './packet.js';
import { findTool, packageFor } from './tools.js';

export interface CaptureOptions {
  /** pcap filter expression. */
  readonly filter: string;
  /** Network namespace to capture in; omitted = this process's own namespace. */
  readonly netns?: NetnsRef;
  readonly onPacket?: (packet: Packet) => void;
  /** Packets kept in memory; later ones are counted in `overflow` (and still passed to `onPacket`). */
  readonly maxPackets?: number;
  readonly readyTimeoutMs?: number;
  /** Time tcpdump gets to flush after SIGINT before SIGKILL. */
  readonly stopGraceMs?: number;
}

export interface CaptureStats {
  /** Lines that looked like nothing we parse (kept, bounded, so nothing vanishes silently). */
  readonly unparsed: readonly string[];
  readonly overflow: number;
  /** tcpdump's own summary, known after stop(); `undefined` if it was killed before printing it. */
  readonly droppedByKernel: number | undefined;
}

export interface Capture {
  /** pid of tcpdump itself (nsenter execs it, so this is not a wrapper). */
  readonly pid: number;
  readonly filter: string;
  packets(): readonly Packet[];
  stats(): CaptureStats;
  /** Ends tcpdump (SIGINT, flush, SIGKILL after the grace) and returns every packet kept. Idempotent. */
  stop(): Promise<Packet[]>;
}

const MAX_UNPARSED = 200;
const MAX_STDERR = 50;

export async function startCapture(options: CaptureOptions): Promise<Capture> {
  const tcpdump = findTool('tcpdump');
  if (tcpdump === undefined) {
    throw new LabError('LAB_UNAVAILABLE', 'no packet witness: `tcpdump` is not installed', {
      hint: `apt-get install -y ${packageFor('tcpdump')}`,
    });
  }
  // --immediate-mode: TPACKET_V3 otherwise holds packets in a block for up to a second, and a stop in that
  // window could lose them.
  const args = ['-l', '-n', '-tt', '-p', '--immediate-mode', '-B', '4096', '-i', 'any', options.filter];
  const argv = options.netns === undefined ? [tcpdump, ...args] : nsenterArgv(options.netns, [tcpdump, ...args]);
  const [file, ...rest] = argv;
  const child = execa(file ?? 'nsenter', rest, { buffer: false, reject: false, stdin: 'ignore', cleanup: true });
  const pid = child.pid;
  const done = child.then(() => undefined);
  if (pid === undefined) {
    await done;
    throw new LabError('WITNESS_FAILED', `could not start ${argv.join(' ')}`, { hint: 'is nsenter (util-linux) installed?' });
  }
  const unhook = onProcessExit(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  void done.then(unhook);

  const maxPackets = options.maxPackets ?? 10_000;
  const kept: Packet[] = [];
  const unparsed: string[] = [];
  const stderr: string[] = [];
  let overflow = 0;
  let droppedByKernel: number | undefined;

  const stdoutClosed = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const packet = parseTcpdumpLine(line);
      if (packet === undefined) {
        if (unparsed.length < MAX_UNPARSED && line.trim() !== '') unparsed.push(line);
        return;
      }
      if (kept.length < maxPackets) kept.push(packet);
      else overflow += 1;
      options.onPacket?.(packet);
    }).on('close', resolve);
  });

  let listening = (): void => undefined;
  const stderrClosed = new Promise<void>((resolve) => {
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (stderr.length < MAX_STDERR) stderr.push(line);
      const dropped = /^(\d+) packets? dropped by kernel/.exec(line);
      if (dropped?.[1] !== undefined) droppedByKernel = Number(dropped[1]);
      if (line.startsWith('listening on ')) listening();
    }).on('close', resolve);
  });
  const ready = new Promise<void>((resolve, reject) => {
    listening = resolve;
    void Promise.all([done, stderrClosed]).then(() => {
      reject(new LabError('WITNESS_FAILED', `tcpdump exited before listening: ${stderr.join(' | ')}`));
    });
  });

  let stopping: Promise<Packet[]> | undefined;
  const stop = (): Promise<Packet[]> => {
    stopping ??= (async () => {
      child.kill('SIGINT');
      const grace = new AbortController();
      const graceMs = options.stopGraceMs ?? 2000;
      const timeout = sleep(graceMs, 'timeout' as const, { signal: grace.signal }).catch(() => 'aborted' as const);
      const first = await Promise.race([done.then(() => 'exited' as const), timeout]);
      grace.abort();
      if (first === 'timeout') child.kill('SIGKILL');
      await Promise.all([done, stdoutClosed, stderrClosed]);
      return [...kept];
    })();
    return stopping;
  };

  const timeoutMs = options.readyTimeoutMs ?? 10_000;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new LabError('WITNESS_FAILED', `tcpdump did not report listening within ${timeoutMs} ms: ${stderr.join(' | ')}`));
      }, timeoutMs);
      ready.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pid,
    filter: options.filter,
    packets: () => [...kept],
    stats: () => ({ unparsed: [...unparsed], overflow, droppedByKernel }),
    stop,
  };
}
