import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { readHostView, readProcessPosture } from '../../lab/host-process.js';

describe('readProcessPosture', () => {
  it("reads a running process's posture with its command line, which ties it to an execution", async () => {
    const posture = await readProcessPosture(process.pid, await readHostView());
    const own = (await readFile('/proc/self/cmdline')).subarray(0, 1024).toString('utf8').replaceAll('\0', ' ');
    expect(own.trim()).not.toBe('');
    expect(posture?.cmdline).toBe(own);
    // The harness's own process shares every namespace it has with the host view it was compared to.
    expect(Object.values(posture?.sharedNamespaces ?? {}).every(Boolean)).toBe(true);
  });

  it('gives no posture for a process without arguments (as one is mid-exec): read again later, never judged without its nonce', async () => {
    // pid 2 (kthreadd) has readable status and mountinfo and an empty command line, like a process between the
    // kernel switching its executable and setting up its arguments.
    expect(await readProcessPosture(2, await readHostView())).toBeUndefined();
  });
});
