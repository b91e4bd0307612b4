import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandcheckError } from '../core/errors.js';
import { STATE_ROOT, mkdirWithTraversableParents } from '../core/state-root.js';

/** How long a probe waits for another run's host-watching probe before it gives up (inconclusive). */
export const HOST_WATCH_WAIT_SECONDS = 600;

/** One file per machine for root runs; a user's own runs share one in the temp directory. */
export function hostWatchLockPath(): string {
  const uid = process.getuid?.() ?? -1;
  if (uid === 0) {
    mkdirWithTraversableParents(STATE_ROOT, 0o711);
    return join(STATE_ROOT, 'host-watch.lock');
  }
  return join(tmpdir(), `sandcheck-host-watch-${uid}.lock`);
}

/**
 * Holds the machine's host-watch lock while a probe measures the whole host (free disk, memory, process count):
 * another sandcheck run's disk-fill on the same machine would otherwise count as this box's. The kernel holds
 * the lock (flock(1)) for a child that waits on our stdin, so it goes when we go, even on SIGKILL.
 */
export async function acquireHostWatch(runId: string, opts: { path?: string; waitSeconds?: number; signal?: AbortSignal } = {}): Promise<() => Promise<void>> {
  const { path = hostWatchLockPath(), waitSeconds = HOST_WATCH_WAIT_SECONDS, signal } = opts;
  const child = spawn(
    'flock',
    ['--exclusive', '--timeout', String(waitSeconds), path, 'sh', '-c', 'echo locked; read _ || :', `sandcheck-host-watch-${runId}`],
    {
      stdio: ['pipe', 'pipe', 'ignore'],
    },
  );
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.stdin.on('error', () => undefined);
    child.on('exit', () => resolve());
    child.on('error', (e) => {
      spawnError = e;
      resolve();
    });
  });
  // An interrupted run stops waiting at once: the waiting flock goes, and the probe ends as interrupted.
  const onAbort = (): void => void child.kill('SIGTERM');
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  const locked = await new Promise<boolean>((resolve) => {
    child.stdout.on('data', (b: Buffer) => {
      if (b.toString().includes('locked')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  signal?.removeEventListener('abort', onAbort);
  if (!locked || signal?.aborted) {
    child.stdin.destroy();
    await exited;
    if (signal?.aborted) throw new SandcheckError('HARNESS', `the run was interrupted while it waited for the host-watch lock ${path}`);
    if (spawnError)
      throw new SandcheckError('HARNESS', `cannot take the host-watch lock ${path}: ${spawnError.message}`, {
        hint: 'flock(1) comes with util-linux: apt-get install -y util-linux',
      });
    throw new SandcheckError(
      'HARNESS',
      `another sandcheck run held the host-watch lock ${path} for over ${waitSeconds} s: this probe's host measurements would mix with its own`,
      {
        hint: 'run the two suites one after the other, or wait for the other run to finish',
      },
    );
  }
  return async () => {
    child.stdin.end();
    await exited;
  };
}
