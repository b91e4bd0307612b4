import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireHostWatch } from '../../harness/host-watch-lock.js';
import { packageRoot } from '../../harness/paths.js';

const dir = await mkdtemp(join(tmpdir(), 'sc-hostwatch-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the host-watch lock: one host-measuring probe on the machine at a time', () => {
  it('a second holder waits for the first, and gives up with HARNESS past its wait', async () => {
    const path = join(dir, 'a.lock');
    const release = await acquireHostWatch('rtestA', path, 5);
    const order: string[] = [];
    const second = acquireHostWatch('rtestB', path, 5).then((r) => {
      order.push('second');
      return r;
    });
    await new Promise((r) => setTimeout(r, 300));
    order.push('first released');
    await release();
    const releaseSecond = await second;
    expect(order).toEqual(['first released', 'second']);
    await expect(acquireHostWatch('rtestC', path, 1)).rejects.toMatchObject({ code: 'HARNESS', message: expect.stringMatching(/another sandcheck run held the host-watch lock/) });
    await releaseSecond();
  });

  it('a holder killed with SIGKILL frees the lock', async () => {
    const path = join(dir, 'b.lock');
    const holder = spawn(process.execPath, ['--input-type=module', '-e', `const { acquireHostWatch } = await import(${JSON.stringify(join(packageRoot(), 'dist/harness/host-watch-lock.js'))}); await acquireHostWatch('rtestD', ${JSON.stringify(path)}, 5); console.log('held'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => holder.stdout.on('data', (b: Buffer) => b.toString().includes('held') && resolve()));
    await expect(acquireHostWatch('rtestE', path, 1)).rejects.toMatchObject({ code: 'HARNESS' });
    holder.kill('SIGKILL');
    const release = await acquireHostWatch('rtestF', path, 5);
    await release();
  });
});
