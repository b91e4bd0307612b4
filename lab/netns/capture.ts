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
  /** Packets kept in memory (default 10 000); see `keep` for which ones. Every packet still goes to `onPacket`. */
  readonly maxPackets?: number;
  /**
   * `first` (default): keep the first `maxPackets`, count the rest in `overflow` (a leak watch wants the first).
   * `latest`: a ring of the newest `maxPackets`; `lastEvictedMs` says up to when records are gone.
   */
  readonly keep?: 'first' | 'latest';
  readonly readyTimeoutMs?: number;
  /** Time tcpdump gets to flush after SIGINT before SIGKILL. */
  readonly stopGraceMs?: number;
}

export interface CaptureStats {
  /** Lines that looked like nothing we parse (kept, bounded, so nothing vanishes silently). */
  readonly unparsed: readonly string[];
  /** Packets not kept: past the bound (`first`) or evicted from the ring (`latest`). */
  readonly overflow: number;
  /** `latest` mode: capture time of the newest evicted packet; a window ending before it is intact. */
  readonly lastEvictedMs: number | undefined;
  /** tcpdump's own count (its last stats line: from `requestStats()` or its exit summary); `undefined` before any. */
  readonly droppedByKernel: number | undefined;
  readonly droppedByInterface: number | undefined;
}

/** pcap statistics as tcpdump printed them on request (SIGUSR1). */
export interface PcapStats {
  readonly captured: number;
  readonly receivedByFilter: number;
  readonly droppedByKernel: number;
  readonly droppedByInterface: number;
}

export interface Capture {
  /** pid of tcpdump itself (nsenter execs it, so this is not a wrapper). */
  readonly pid: number;
  readonly filter: string;
  packets(): readonly Packet[];
  stats(): CaptureStats;
  /** Asks tcpdump for its pcap statistics (SIGUSR1) and resolves with the line it prints; undefined if none came in time. */
  requestStats(timeoutMs?: number): Promise<PcapStats | undefined>;
  /** Ends tcpdump (SIGINT, flush, SIGKILL after the grace) and returns every packet kept. Idempotent. */
  stop(): Promise<Packet[]>;
}

const MAX_UNPARSED = 200;
const MAX_STDERR = 50;

/** The environment of the lab's own tools: PATH only, never the harness's (it holds decoy and maybe real credentials). */
export function minimalEnv(): Record<string, string> {
  return { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
}

const count = (line: string, what: string): number | undefined => {
  const m = new RegExp(`(\\d+) packets? ${what}`).exec(line);
  return m?.[1] === undefined ? undefined : Number(m[1]);
};

/** tcpdump's SIGUSR1 line (`tcpdump: 3 packets captured, 5 packets received by filter, 0 packets dropped by kernel`). */
export function parseStatsLine(line: string): PcapStats | undefined {
  const captured = count(line, 'captured');
  const receivedByFilter = count(line, 'received by filter');
  const droppedByKernel = count(line, 'dropped by kernel');
  if (captured === undefined || receivedByFilter === undefined || droppedByKernel === undefined) return undefined;
  return { captured, receivedByFilter, droppedByKernel, droppedByInterface: count(line, 'dropped by interface') ?? 0 };
}

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
  const child = execa(file ?? 'nsenter', rest, { buffer: false, reject: false, stdin: 'ignore', cleanup: true, env: minimalEnv(), extendEnv: false });
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
  const latest = options.keep === 'latest';
  let kept: Packet[] = [];
  const unparsed: string[] = [];
  const stderr: string[] = [];
  let overflow = 0;
  let lastEvictedMs: number | undefined;
  let droppedByKernel: number | undefined;
  let droppedByInterface: number | undefined;
  const statsWaiters: ((stats: PcapStats) => void)[] = [];

  const stdoutClosed = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout })
      .on('line', (line) => {
        const packet = parseTcpdumpLine(line);
        if (packet === undefined) {
          if (unparsed.length < MAX_UNPARSED && line.trim() !== '') unparsed.push(line);
          return;
        }
        if (kept.length < maxPackets) kept.push(packet);
        else if (!latest) overflow += 1;
        else {
          // Evict a slice at a time so the ring costs O(1) per packet on average.
          const evict = Math.max(1, Math.floor(maxPackets / 10));
          lastEvictedMs = kept[evict - 1]?.time ?? lastEvictedMs;
          overflow += evict;
          kept = kept.slice(evict);
          kept.push(packet);
        }
        options.onPacket?.(packet);
      })
      .on('close', resolve);
  });

  let listening = (): void => undefined;
  const stderrClosed = new Promise<void>((resolve) => {
    createInterface({ input: child.stderr })
      .on('line', (line) => {
        if (stderr.length < MAX_STDERR) stderr.push(line);
        const stats = parseStatsLine(line);
        if (stats !== undefined) {
          droppedByKernel = stats.droppedByKernel;
          droppedByInterface = stats.droppedByInterface;
          for (const waiter of statsWaiters.splice(0)) waiter(stats);
        } else {
          // The exit summary prints one count per line.
          droppedByKernel = count(line, 'dropped by kernel') ?? droppedByKernel;
          droppedByInterface = count(line, 'dropped by interface') ?? droppedByInterface;
        }
        if (line.startsWith('listening on ')) listening();
      })
      .on('close', resolve);
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
    stats: () => ({ unparsed: [...unparsed], overflow, lastEvictedMs, droppedByKernel, droppedByInterface }),
    requestStats: (statsTimeoutMs = 2000) => {
      if (stopping !== undefined) return Promise.resolve(undefined);
      return new Promise<PcapStats | undefined>((resolve) => {
        const timer = setTimeout(() => {
          const at = statsWaiters.indexOf(onStats);
          if (at >= 0) statsWaiters.splice(at, 1);
          resolve(undefined);
        }, statsTimeoutMs);
        const onStats = (stats: PcapStats): void => {
          clearTimeout(timer);
          resolve(stats);
        };
        statsWaiters.push(onStats);
        try {
          process.kill(pid, 'SIGUSR1');
        } catch {
          // Gone: the timer answers undefined.
        }
      });
    },
    stop,
  };
}
