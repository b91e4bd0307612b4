import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { payloadFiles } from '../../harness/exec-payload.js';
import { CI_POLICY } from '../../model/policy.js';
import type { ProbeContext } from '../../model/probe.js';
import { makeCanaries } from '../../lab/canaries.js';
import { longLine } from '../../probes/long-line/probe.js';

const dir = await mkdtemp(join(tmpdir(), 'sc-flood-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
const ctx: ProbeContext = {
  policy: CI_POLICY,
  runId: 'rflood',
  nonce: 'f100d',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
};

describe('the flood payload under a controller that closes the pipe at its budget', () => {
  it('dies of SIGPIPE (a stop the harness sees from outside), not an exit 0 of its own', async () => {
    const prepared = await payloadFiles(longLine, ctx);
    for (const f of prepared.files) await writeFile(join(dir, f.path), f.content);
    const args = { nonce: ctx.nonce, probe: longLine.id, ...(longLine.args?.(ctx) ?? {}) };
    const child = spawn('/usr/bin/python3', ['payload.py', JSON.stringify(args)], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
    let got = 0;
    child.stdout.on('data', (b: Buffer) => {
      got += b.length;
      if (got > 64 * 1024) child.stdout.destroy();
    });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGPIPE' });
  });
});
