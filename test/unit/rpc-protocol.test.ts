import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Backend, Environment, ExecResult } from '../../model/backend-contract.js';
import { RpcConnection } from '../../backends/rpc/connection.js';
import { loadBackend } from '../../backends/registry.js';
import { SandcheckError } from '../../core/errors.js';
import { packageRoot } from '../../core/paths.js';
import { CI_POLICY } from '../../model/policy.js';

const ADAPTER = join(packageRoot(), 'test', 'fixtures', 'rpc', 'scripted-adapter.mjs');
const spec = `rpc:${process.execPath} ${ADAPTER}`;
const opened: Backend[] = [];
/** The adapter's workspaces: the modes that break the protocol are SIGKILLed and cannot remove their own. */
const tmp = mkdtempSync(join(tmpdir(), 'sc-rpc-test-'));

async function load(mode: string): Promise<Backend> {
  const b = await loadBackend(spec, { mode, tmp });
  opened.push(b);
  return b;
}

async function run(env: Environment, argv: string[]): Promise<{ r: ExecResult; out: string }> {
  let out = '';
  const sink = { write: (c: Uint8Array) => void (out += Buffer.from(c).toString()) };
  const r = await env.exec({ argv, timeoutMs: 5000, maxOutputBytes: 1 << 20, stdout: sink, stderr: sink, signal: new AbortController().signal });
  return { r, out };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandcheckError);
  return (err as SandcheckError).code;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((b) => b.dispose?.()));
});
afterAll(() => {
  // Every adapter is gone by now; what a killed one left is this file's to remove.
  rmSync(tmp, { recursive: true, force: true });
});

describe('rpc adapter protocol (--backend rpc:<command>)', () => {
  it('a well-behaved adapter: claims, files, streamed output and exit status travel both ways; dispose ends it', async () => {
    const b = await load('ok');
    expect(b.name).toBe('scripted');
    expect(() => b.capabilities(CI_POLICY)).toThrow(/prepare/);
    await b.prepare?.(CI_POLICY);
    expect(b.capabilities(CI_POLICY)).toEqual({ isolation: 'none', enforces: [] });
    await b.preflight();
    const env = await b.create(CI_POLICY, { runId: 'rrpc0', controllerEnv: {}, scratchDir: '/nonexistent' });
    await env.putFiles([{ path: 'in/a.txt', content: new Uint8Array(Buffer.from('hello\n')) }]);
    const { r, out } = await run(env, ['sh', '-c', 'cat in/a.txt; echo err >&2; exit 3']);
    expect(r).toMatchObject({ exitCode: 3, signal: null, timedOut: false, oomKilled: 'unknown' });
    expect(out).toContain('hello\n');
    expect(out).toContain('err\n');
    const got = await env.getFiles(['in/a.txt', 'nope'], { maxBytesPerFile: 3 });
    expect(got.map((f) => [f.kind, f.size, f.content ? Buffer.from(f.content).toString() : undefined])).toEqual([
      ['file', 6, 'hel'],
      ['missing', 0, undefined],
    ]);
    expect(await env.destroy()).toEqual({ items: [] });
    expect(await env.destroy()).toEqual({ items: [] });
  });

  it("each run gets its own adapter process started with the run's controller environment; the one started at load has PATH only", async () => {
    const b = await load('ok');
    await b.prepare?.(CI_POLICY);
    const ctx = {
      runId: 'rrpc1',
      controllerEnv: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SANDCHECK_DECOY_TOKEN: 'SCNRYdecoy1' },
      scratchDir: '/nonexistent',
    };
    const before = await b.create(CI_POLICY, ctx);
    expect((await run(before, ['adapter-env', 'SANDCHECK_DECOY_TOKEN'])).out).toBe('-');
    await before.destroy();
    const handle = await b.openRun?.(ctx);
    const during = await b.create(CI_POLICY, ctx);
    expect((await run(during, ['adapter-env', 'SANDCHECK_DECOY_TOKEN'])).out).toBe('SCNRYdecoy1');
    await during.destroy();
    await handle?.close();
  });

  it('an adapter that exits during hello is ADAPTER_INVALID, with its last stderr in the hint', async () => {
    const err = await loadBackend(spec, { mode: 'exit-on-hello' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('ADAPTER_INVALID');
    expect((err as SandcheckError).hint).toContain('cannot find the vendor SDK');
  });

  it("an adapter's BACKEND_UNAVAILABLE keeps its code and hint (the run stops with exit 3)", async () => {
    const b = await load('unavailable');
    const err = await b.preflight().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE', hint: 'export VENDOR_KEY=…' });
  });

  for (const [mode, code] of [
    ['not-json', 'ADAPTER_PROTOCOL'],
    ['long-line', 'ADAPTER_PROTOCOL'],
    ['unknown-id', 'ADAPTER_PROTOCOL'],
    ['bad-result', 'ADAPTER_PROTOCOL'],
    ['exit-on-exec', 'ADAPTER_UNRESPONSIVE'],
  ] as const) {
    it(`${mode}: the exec fails with ${code} and every later call fails too`, async () => {
      const b = await load(mode);
      await b.prepare?.(CI_POLICY);
      const env = await b.create(CI_POLICY, { runId: 'rrpc2', controllerEnv: {}, scratchDir: '/nonexistent' });
      expect(await codeOf(run(env, ['true']))).toBe(code);
      expect(await codeOf(env.putFiles([]))).toBe(code);
    });
  }

  it('a call the adapter never answers fails at its bound and ends the adapter', async () => {
    const conn = RpcConnection.start([process.execPath, ADAPTER], { env: { PATH: process.env['PATH'] ?? '' }, cwd: packageRoot() });
    try {
      await conn.call('hello', { protocol: 1, options: { mode: 'silent-exec', tmp } }, 10_000, z.unknown());
      await conn.call('create', {}, 10_000, z.unknown());
      const t0 = Date.now();
      expect(
        await codeOf(conn.call('exec', { envId: 'e1', execId: 'x1', argv: ['true'], env: {}, timeoutMs: 100, maxOutputBytes: 10 }, 300, z.unknown())),
      ).toBe('ADAPTER_UNRESPONSIVE');
      expect(Date.now() - t0).toBeLessThan(5000);
      const pid = conn.pid!;
      for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
      expect(alive(pid)).toBe(false);
    } finally {
      await conn.close(1000);
    }
  });
});
