import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireHostWatch } from '../../harness/host-watch-lock.js';
import { packageRoot } from '../../core/paths.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';

const dir = await mkdtemp(join(tmpdir(), 'sc-hostwatch-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the host-watch lock: one host-measuring probe on the machine at a time', () => {
  it('a second holder waits for the first, and gives up with HARNESS past its wait', async () => {
    const path = join(dir, 'a.lock');
    const release = await acquireHostWatch('rtestA', { path, waitSeconds: 5 });
    const order: string[] = [];
    const second = acquireHostWatch('rtestB', { path, waitSeconds: 5 }).then((r) => {
      order.push('second');
      return r;
    });
    await new Promise((r) => setTimeout(r, 300));
    order.push('first released');
    await release();
    const releaseSecond = await second;
    expect(order).toEqual(['first released', 'second']);
    await expect(acquireHostWatch('rtestC', { path, waitSeconds: 1 })).rejects.toMatchObject({
      code: 'HARNESS',
      message: expect.stringMatching(/another sandcheck run held the host-watch lock/),
    });
    await releaseSecond();
  });

  it('a holder killed with SIGKILL frees the lock', async () => {
    const path = join(dir, 'b.lock');
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { acquireHostWatch } = await import(${JSON.stringify(join(packageRoot(), 'dist/harness/host-watch-lock.js'))}); await acquireHostWatch('rtestD', { path: ${JSON.stringify(path)}, waitSeconds: 5 }); console.log('held'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => holder.stdout.on('data', (b: Buffer) => b.toString().includes('held') && resolve()));
    await expect(acquireHostWatch('rtestE', { path, waitSeconds: 1 })).rejects.toMatchObject({ code: 'HARNESS' });
    holder.kill('SIGKILL');
    const release = await acquireHostWatch('rtestF', { path, waitSeconds: 5 });
    await release();
  });

  it('an interrupted run stops waiting at once: HARNESS, and its waiting flock is gone', async () => {
    const path = join(dir, 'c.lock');
    const release = await acquireHostWatch('rtestG', { path, waitSeconds: 5 });
    const abort = new AbortController();
    const started = Date.now();
    const waiting = acquireHostWatch('rtestH', { path, waitSeconds: 60, signal: abort.signal });
    setTimeout(() => abort.abort(), 200);
    await expect(waiting).rejects.toMatchObject({ code: 'HARNESS', message: expect.stringMatching(/interrupted while it waited for the host-watch lock/) });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await findProcessesWithCmdline('sandcheck-host-watch-rtestH')).toEqual([]);
    // The holder was untouched, and the lock is still its own until it lets go.
    await expect(acquireHostWatch('rtestI', { path, waitSeconds: 1 })).rejects.toMatchObject({ message: expect.stringMatching(/another sandcheck run held/) });
    await release();
    const already = new AbortController();
    already.abort();
    await expect(acquireHostWatch('rtestJ', { path, waitSeconds: 5, signal: already.signal })).rejects.toMatchObject({ code: 'HARNESS' });
  });
});
