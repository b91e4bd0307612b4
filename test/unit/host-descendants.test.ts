import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { processTree, withDescendants } from '../../backends/shared/host-proc.js';

describe('withDescendants', () => {
  it('finds a process and its grandchildren by their parentage, as the whole-/proc walk does', async () => {
    // sh → (sleep, sleep): the grandchildren are what a runtime moved elsewhere would look like to a cgroup.
    const sh = spawn('/bin/sh', ['-c', '/bin/sleep 5 & /bin/sleep 5 & wait'], { stdio: 'ignore' });
    try {
      const pid = sh.pid;
      if (pid === undefined) throw new Error('sh did not start');
      let found: number[] = [];
      for (let i = 0; i < 50 && found.length < 3; i++) {
        await sleep(50);
        found = withDescendants([pid]);
      }
      expect(found).toHaveLength(3);
      expect(found[0]).toBe(pid);
      expect([...found].sort()).toEqual([...(await processTree(pid))].sort());
      // Bounded, and a pid that is gone contributes only itself.
      expect(withDescendants([pid], 1)).toEqual([pid]);
      expect(withDescendants([2 ** 22 + 7])).toEqual([2 ** 22 + 7]);
    } finally {
      // Children first: once sh is gone they belong to init, no longer to it. Never without a pid (kill(-1) signals everything).
      if (sh.pid !== undefined && sh.pid > 1) for (const p of withDescendants([sh.pid]).reverse()) if (p > 1) process.kill(p, 'SIGKILL');
    }
  });
});
