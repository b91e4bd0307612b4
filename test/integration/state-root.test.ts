import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import createBwrapBackend from '../../backends/bwrap/index.js';
import { CI_POLICY } from '../../model/policy.js';
import { STATE_ROOT } from '../../core/state-root.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const skip = await bwrapSkipReason();

describe.skipIf(skip !== undefined)('bwrap on a machine whose state root another sandcheck left 0700', () => {
  // On a fresh machine the first run (any backend) made /run/sandcheck 0700 with its journal directory, and
  // every later bwrap box (run as another uid) failed with "Can't find source path …: Permission denied".
  it('repairs the state root and the box runs', async () => {
    await mkdir(STATE_ROOT, { recursive: true, mode: 0o711 });
    const before = (await stat(STATE_ROOT)).mode & 0o7777;
    const scratchDir = await mkdtemp(join(tmpdir(), 'sandcheck-rstate-'));
    try {
      await chmod(STATE_ROOT, 0o700);
      const backend = await createBwrapBackend();
      const runId = `rstate${randomBytes(3).toString('hex')}`;
      const env = await backend.create(CI_POLICY, { runId, scratchDir, controllerEnv: {} });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      try {
        const result = await env.exec({
          argv: ['python3', '-c', 'import os; print("uid", os.getuid())'],
          timeoutMs: 10_000,
          maxOutputBytes: 65_536,
          stdout: { write: (c) => out.push(Buffer.from(c)) },
          stderr: { write: (c) => err.push(Buffer.from(c)) },
          signal: new AbortController().signal,
        });
        expect(Buffer.concat(err).toString('utf8')).toBe('');
        expect(result.exitCode).toBe(0);
        expect(Buffer.concat(out).toString('utf8')).toMatch(/^uid [1-9]\d*\n$/);
      } finally {
        await env.destroy();
      }
      expect((await stat(STATE_ROOT)).mode & 0o011).toBe(0o011);
    } finally {
      await chmod(STATE_ROOT, before | 0o011);
      await rm(scratchDir, { recursive: true, force: true });
    }
  });
});
