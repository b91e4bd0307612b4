import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface SpawnResult {
  ms: number;
  exitCode: number | null;
  signal: string | null;
  stdoutBytes: number;
  stderrHead: string;
  /**
   * CPU (user + system) of the child and every descendant it waited for, from this process's cutime + cstime
   * (/proc/self/stat, 10 ms ticks): a figure the machine's load barely moves. Only right while nothing else of
   * this process ends at the same time (the benches run one command at a time).
   */
  cpuMs: number;
}

/** cutime + cstime of this process in ms (children reaped so far). */
export function childrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of stat(5); f starts at field 3.
    return ((Number(f[13]) || 0) + (Number(f[14]) || 0)) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * Runs one command to completion (every output pipe closed) and times it on this process's clock.
 * `extraPipes` opens that many more pipes after stderr (bwrap's --json-status-fd 3), drained and ignored;
 * `extraFds` are open files handed on after them (bwrap's --seccomp 4).
 */
export function spawnTimed(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd?: string; extraPipes?: number; extraFds?: readonly number[]; timeoutMs?: number; signal?: AbortSignal },
): Promise<SpawnResult> {
  const [file, ...args] = argv;
  if (file === undefined) return Promise.reject(new Error('empty argv'));
  const pipes = 3 + (options.extraPipes ?? 0);
  const stdio: ('ignore' | 'pipe' | number)[] = [
    'ignore',
    'pipe',
    'pipe',
    ...Array.from({ length: options.extraPipes ?? 0 }, () => 'pipe' as const),
    ...(options.extraFds ?? []),
  ];
  const t0 = performance.now();
  const cpu0 = childrenCpuMs();
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: options.env, cwd: options.cwd ?? '/', stdio });
    let stdoutBytes = 0;
    let stderrHead = '';
    child.stdout?.on('data', (c: Buffer) => (stdoutBytes += c.length));
    child.stderr?.on('data', (c: Buffer) => {
      if (stderrHead.length < 2000) stderrHead += c.toString('utf8');
    });
    for (let fd = 3; fd < pipes; fd++) child.stdio[fd]?.on('data', () => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    // SIGTERM, not SIGKILL: a sandcheck run tears its own lab and boxes down on it.
    const stop = (): void => void child.kill('SIGTERM');
    options.signal?.addEventListener('abort', stop, { once: true });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', stop);
      resolve({ ms: performance.now() - t0, exitCode: code, signal, stdoutBytes, stderrHead: stderrHead.slice(0, 2000), cpuMs: childrenCpuMs() - cpu0 });
    });
  });
}
