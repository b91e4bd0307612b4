import { basename } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { checkAdapter } from '../../adapter/check/run-checks.js';
import { AdapterCheckReportSchema, type CheckId } from '../../adapter/check/model.js';
import { checkReportText } from '../../adapter/check/report.js';
import { CheckSession, CheckSink } from '../../adapter/check/session.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import type { Backend, Capabilities, Environment, ExecRequest, PolicyItem } from '../../model/backend-contract.js';
import { CI_POLICY } from '../../model/policy.js';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';
import createBwrapBackend from '../../backends/bwrap/index.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const bwrapSkip = await bwrapSkipReason();

/**
 * Each check must be able to fail: the process control with exactly one property broken fails
 * exactly the check that guards it, and the unbroken control passes it.
 */
type EnvPatch = (env: Environment) => Partial<Environment>;

function mutant(patch: EnvPatch, opts: { capabilities?: (c: Capabilities) => Capabilities; reuseEnv?: boolean; dropLab?: boolean } = {}): Backend {
  const base = new ProcessBackend();
  let shared: Environment | undefined;
  return {
    name: 'mutant',
    description: 'the process control with one property broken',
    capabilities: (p) => (opts.capabilities ?? ((c) => c))(base.capabilities(p)),
    preflight: () => base.preflight(),
    create: async (policy, ctx) => {
      if (opts.reuseEnv && shared) return shared;
      const { lab: _lab, ...noLab } = ctx;
      const env = await base.create(policy, opts.dropLab ? noLab : ctx);
      const wrapped: Environment = {
        id: env.id,
        putFiles: (f) => env.putFiles(f),
        exec: (r) => env.exec(r),
        getFiles: (p, o) => env.getFiles(p, o),
        destroy: () => (opts.reuseEnv ? Promise.resolve({ items: [] }) : env.destroy()),
        ...patch(env),
      };
      if (opts.reuseEnv) shared = wrapped;
      return wrapped;
    },
  };
}

/**
 * `env.exec(r)` stopped by a wall clock of the backend's own at `r.timeoutMs`, as a real backend's timer is: a timer
 * held until exec returns. Not `AbortSignal.any([r.signal, AbortSignal.timeout(r.timeoutMs)])`: on Node 20 the timeout
 * signal inside any() is held only weakly (nodejs/node#57736), so a full GC during the 2 s (which a busy worker has)
 * collects it, it never fires, and the check's own backstop stops the program instead.
 */
async function execWithOwnTimer(env: Environment, r: ExecRequest): ReturnType<Environment['exec']> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), r.timeoutMs);
  const forward = (): void => stop.abort();
  if (r.signal.aborted) stop.abort();
  else r.signal.addEventListener('abort', forward, { once: true });
  try {
    return await env.exec({ ...r, signal: stop.signal });
  } finally {
    clearTimeout(timer);
    r.signal.removeEventListener('abort', forward);
  }
}

const claim =
  (...items: PolicyItem[]) =>
  (c: Capabilities): Capabilities => ({ ...c, enforces: [...c.enforces, ...items] });

async function statusOf(backend: Backend, id: CheckId): Promise<{ status: string; detail: string; runId: string }> {
  const report = await checkAdapter(backend, { policy: CI_POLICY, only: [id] });
  const r = report.checks.find((c) => c.id === id);
  return { status: r?.status ?? 'absent', detail: r?.detail ?? '', runId: report.runId };
}

/** Processes the check run left, by its run id (another file's check may be running meanwhile). */
const leftBy = (runId: string) => findProcessesWithCmdline(`sandcheck-check-${runId}-`);

const isRoot = process.getuid?.() === 0;

const MUTANTS: [CheckId, string, () => Backend][] = [
  [
    'capabilities.consistent',
    'claims an unknown policy item',
    () => mutant(() => ({}), { capabilities: (c) => ({ ...c, enforces: [...c.enforces, 'network.everything' as PolicyItem] }) }),
  ],
  ['create.fresh-workspace', 'hands out the same environment again', () => mutant(() => ({}), { reuseEnv: true })],
  [
    'files.binary-roundtrip',
    'puts files through a UTF-8 string',
    () => mutant((env) => ({ putFiles: (f) => env.putFiles(f.map((x) => ({ ...x, content: Buffer.from(Buffer.from(x.content).toString('utf8')) }))) })),
  ],
  ['files.empty', 'drops empty files', () => mutant((env) => ({ putFiles: (f) => env.putFiles(f.filter((x) => x.content.byteLength > 0)) }))],
  ['files.nested', 'flattens paths', () => mutant((env) => ({ putFiles: (f) => env.putFiles(f.map((x) => ({ ...x, path: basename(x.path) }))) }))],
  ['files.modes', 'ignores PutFile.mode', () => mutant((env) => ({ putFiles: (f) => env.putFiles(f.map(({ mode: _m, ...x }) => x)) }))],
  ['files.missing', 'throws for a missing path', () => mutant(() => ({ getFiles: () => Promise.reject(new Error('ENOENT')) }))],
  [
    'exec.exit-codes',
    'reports every failure as exit 1',
    () =>
      mutant((env) => ({
        exec: async (r) => {
          const x = await env.exec(r);
          return { ...x, exitCode: x.exitCode ? 1 : x.exitCode };
        },
      })),
  ],
  [
    'exec.signal',
    'reports a signalled program as exit 0',
    () => mutant((env) => ({ exec: async (r) => ({ ...(await env.exec(r)), exitCode: 0, signal: null }) })),
  ],
  ['exec.argv', 'runs argv through a shell string', () => mutant((env) => ({ exec: (r) => env.exec({ ...r, argv: ['/bin/sh', '-c', r.argv.join(' ')] }) }))],
  ['exec.stdin', 'drops stdin', () => mutant((env) => ({ exec: (r) => env.exec(withoutStdin(r)) }))],
  ['exec.env', 'drops ExecRequest.env', () => mutant((env) => ({ exec: ({ env: _e, ...r }) => env.exec(r) }))],
  ['exec.cwd', 'ignores ExecRequest.cwd', () => mutant((env) => ({ exec: ({ cwd: _c, ...r }) => env.exec(r) }))],
  ['exec.large-output', 'loses output past 1 MiB', () => mutant((env) => ({ exec: (r) => env.exec({ ...r, stdout: capped(r.stdout, 1024 * 1024) }) }))],
  [
    'exec.start-error',
    'throws when the program is missing',
    () =>
      mutant((env) => ({
        exec: async (r) => {
          const x = await env.exec(r);
          if (x.startError !== undefined || x.exitCode === 127) throw new Error('cannot start');
          return x;
        },
      })),
  ],
  ['exec.timeout', 'claims resources.wallSeconds without a timer', () => mutant(() => ({}), { capabilities: claim('resources.wallSeconds') })],
  [
    'exec.timeout-flag',
    'stops at timeoutMs but says timedOut: false',
    () =>
      mutant((env) => ({ exec: (r) => execWithOwnTimer(env, r) }), {
        capabilities: claim('resources.wallSeconds'),
      }),
  ],
  ['exec.abort', 'ignores the abort signal', () => mutant((env) => ({ exec: (r) => env.exec({ ...r, signal: new AbortController().signal }) }))],
  [
    'destroy.idempotent',
    'throws on a second destroy',
    () =>
      mutant((env) => {
        let n = 0;
        return { destroy: () => (n++ > 0 ? Promise.reject(new Error('already destroyed')) : env.destroy()) };
      }),
  ],
  ['destroy.leaves-nothing', 'never tears down', () => mutant(() => ({ destroy: () => Promise.resolve({ items: [] }) }))],
  ...(isRoot ? [['exec.lab-netns', 'ignores the lab handle', () => mutant(() => ({}), { dropLab: true })] as [CheckId, string, () => Backend]] : []),
];

function withoutStdin(r: ExecRequest): ExecRequest {
  const { stdin: _s, ...rest } = r;
  return rest;
}

function capped(sink: ExecRequest['stdout'], max: number): ExecRequest['stdout'] {
  let n = 0;
  return {
    write: (c) => {
      if (n < max) sink.write(c.subarray(0, max - n));
      n += c.byteLength;
    },
  };
}

describe('adapter check', () => {
  it('the process control passes every functional check; a report matches its schema', async () => {
    const report = await checkAdapter(new ProcessBackend(), { policy: CI_POLICY, source: 'built-in process' });
    expect(AdapterCheckReportSchema.safeParse(report).success).toBe(true);
    expect(report.summary.blockingFailed).toEqual([]);
    const status = Object.fromEntries(report.checks.map((c) => [c.id, c.status]));
    // The control enforces nothing: its /tmp is the host's and root writes a 0444 file (advisory here).
    expect(status).toMatchObject({ 'create.fresh-tmp': 'fail', 'files.read-only': 'fail', 'exec.timeout': 'skip' });
    expect(report.checks.find((c) => c.id === 'files.read-only')?.blocking).toBe(false);
    expect(
      report.checks
        .filter((c) => c.status === 'fail')
        .map((c) => c.id)
        .sort(),
    ).toEqual(['create.fresh-tmp', 'files.read-only']);
    expect(await leftBy(report.runId)).toEqual([]);
  }, 120_000);

  it.each(MUTANTS)(
    '%s fails on a backend that %s',
    async (id, _what, make) => {
      const got = await statusOf(make(), id);
      expect(got.status, got.detail).toBe('fail');
      expect(await leftBy(got.runId)).toEqual([]);
    },
    60_000,
  );

  it('a blocking check whose first attempt hits a tool that failed to start passes on its one repeat, with the first failure on record', async () => {
    let starts = 0;
    // The first program never runs: the "tool" prints its own error and exits 1, as codex's bwrap does when a host mount changes under it.
    const flaky = mutant((env) => ({
      exec: (r) =>
        starts++ === 0 ? env.exec({ ...r, argv: ['/bin/sh', '-c', 'echo "tool: cannot bind mount /oldroot/: Invalid argument" >&2; exit 1'] }) : env.exec(r),
    }));
    const report = await checkAdapter(flaky, { policy: CI_POLICY, only: ['exec.argv'] });
    expect(AdapterCheckReportSchema.safeParse(report).success).toBe(true);
    const argv = report.checks.find((c) => c.id === 'exec.argv');
    expect(argv?.status, argv?.detail).toBe('pass');
    expect(argv?.firstAttempt).toMatch(/cannot bind mount/);
    expect(report.summary).toMatchObject({ blockingFailed: [], passedOnRepeat: ['exec.argv'] });
    expect(checkReportText(report)).toMatch(/PASSED ON REPEAT; the first attempt failed: .*cannot bind mount[\s\S]*exec\.argv only when repeated/);
    // A backend that fails it every time still fails it, both attempts named.
    const broken = MUTANTS.find(([id]) => id === 'exec.argv')?.[2]();
    const again = await checkAdapter(broken!, { policy: CI_POLICY, only: ['exec.argv'] });
    const r = again.checks.find((c) => c.id === 'exec.argv');
    expect(r?.status).toBe('fail');
    expect(r?.detail).toMatch(/failed when repeated too; first attempt: /);
    expect(again.summary.blockingFailed).toEqual(['exec.argv']);
  }, 60_000);

  it('exec.timeout passes on a backend that stops the program at timeoutMs itself', async () => {
    const timed = mutant(
      (env) => ({
        exec: async (r) => {
          const x = await execWithOwnTimer(env, r);
          return { ...x, timedOut: true };
        },
      }),
      { capabilities: claim('resources.wallSeconds') },
    );
    const report = await checkAdapter(timed, { policy: CI_POLICY, only: ['exec.timeout', 'exec.timeout-flag'] });
    expect(report.checks.slice(1).map((c) => [c.id, c.status, c.blocking])).toEqual([
      ['exec.timeout', 'pass', true],
      ['exec.timeout-flag', 'pass', false],
    ]);
  }, 60_000);

  it('the timeout mutants keep their own timer through full garbage collections (as a busy worker has them)', async () => {
    // A full GC every 100 ms during the 2 s: what once collected the mutant's timer on a busy CI machine (see execWithOwnTimer).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const collecting = setInterval(gc, 100);
    try {
      const flag = MUTANTS.find(([id]) => id === 'exec.timeout-flag')?.[2];
      const got = await statusOf(flag!(), 'exec.timeout-flag');
      expect(got.status, got.detail).toBe('fail');
      expect(got.detail).toMatch(/stopped the program at its timeout but reported timedOut: false/);
    } finally {
      clearInterval(collecting);
    }
  }, 60_000);

  it.skipIf(bwrapSkip !== undefined)(
    'hardened bwrap passes every blocking check, read-only inputs and its own timeout included',
    async () => {
      const report = await checkAdapter(await createBwrapBackend(), { policy: CI_POLICY, source: 'built-in bwrap' });
      expect(report.summary.blockingFailed).toEqual([]);
      const byId = new Map(report.checks.map((c) => [c.id, c]));
      for (const id of ['files.read-only', 'create.fresh-tmp', 'exec.timeout', 'destroy.leaves-nothing', 'exec.abort'] as const) {
        expect(byId.get(id), id).toMatchObject({ status: 'pass', blocking: true });
      }
      expect(await leftBy(report.runId)).toEqual([]);
    },
    120_000,
  );

  it('a failing preflight fails preflight.ok and runs nothing else', async () => {
    const down: Backend = {
      name: 'down',
      description: 'down',
      capabilities: () => ({ isolation: 'none', enforces: [] }),
      preflight: () => Promise.reject(new Error('not here')),
      create: () => Promise.reject(new Error('never')),
    };
    const report = await checkAdapter(down, { policy: CI_POLICY });
    expect(report.checks[0]).toMatchObject({ id: 'preflight.ok', status: 'fail' });
    expect(report.checks.slice(1).every((c) => c.status === 'skip')).toBe(true);
    expect(report.summary.blockingFailed).toEqual(['preflight.ok']);
  });

  it('blockingOnly runs only the checks that are blocking for this backend', async () => {
    const report = await checkAdapter(new ProcessBackend(), {
      policy: CI_POLICY,
      blockingOnly: true,
      only: ['files.modes', 'files.read-only', 'exec.exit-codes'],
    });
    expect(report.checks.map((c) => c.id)).toEqual(['preflight.ok', 'exec.exit-codes']);
  });
});

/**
 * The clocks a verdict rests on count from the program's own first byte, not from the exec() call: how long the backend
 * and the interpreter take to start (which grows with the machine's load) decides nothing. A fake environment, no process.
 */
describe("the check session's clocks", () => {
  /** A program that writes "ready" after `startMs`, then runs `runMs` (or until aborted). */
  const slow = (startMs: number, runMs: number): Environment => ({
    id: 'slow',
    putFiles: () => Promise.resolve(),
    getFiles: () => Promise.resolve([]),
    destroy: () => Promise.resolve({ items: [] }),
    exec: (r) =>
      new Promise((resolve) => {
        const timers: NodeJS.Timeout[] = [];
        const end = (signal: string | null): void => {
          for (const t of timers) clearTimeout(t);
          resolve({ exitCode: signal ? null : 0, signal, timedOut: false, oomKilled: 'unknown', outputTruncated: false });
        };
        timers.push(
          setTimeout(() => {
            if (runMs < 0) return end(null);
            r.stdout.write(Buffer.from('ready\n'));
            timers.push(setTimeout(() => end(null), runMs));
          }, startMs),
        );
        r.signal.addEventListener('abort', () => end('SIGKILL'), { once: true });
      }),
  });
  const session = () => new CheckSession(new ProcessBackend(), CI_POLICY, { runId: 'clocks', controllerEnv: {}, scratchDir: '/nonexistent' });

  it('a start slower than the bound after the first byte is not stopped; the program is, that long after its first byte', async () => {
    const late = await session().run(slow(600, 100), { argv: ['x'], backstopMs: 10_000, backstopAfterFirstByteMs: 300 });
    expect(late.backstopped).toBe(false);
    expect(late.result?.exitCode).toBe(0);
    const stuck = await session().run(slow(100, 60_000), { argv: ['x'], backstopMs: 10_000, backstopAfterFirstByteMs: 300 });
    expect(stuck.backstopped).toBe(true);
    expect(stuck.endedAt - stuck.stdout.firstByteAt!).toBeGreaterThanOrEqual(290);
    expect(stuck.elapsedMs).toBeLessThan(10_000);
  });

  it('waiting for a needle ends with the run that never writes it', async () => {
    const s = session();
    const stdout = new CheckSink();
    const running = s.run(slow(100, -1), { argv: ['x'], stdout });
    const t0 = performance.now();
    expect(await stdout.waitFor('ready', 30_000, running)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(30_000);
  });
});

/** A box that writes no results (e.g. Codex's read-only mode): the writing half of files.nested is not applicable, the reading half still checked. */
describe('adapter check on a backend that declares its box writes no results', () => {
  const WHY = 'the tool keeps every filesystem read-only';
  const noResults = (c: Capabilities): Capabilities => ({ ...c, noWrittenResults: WHY });
  // What the program writes never comes out, as in a read-only box.
  const writesNothing: EnvPatch = (env) => ({
    getFiles: async (paths, o) =>
      (await env.getFiles(paths, o)).map((f) => (f.path.startsWith('out/') ? { path: f.path, kind: 'missing' as const, size: 0 } : f)),
  });

  async function nestedCheck(backend: Backend) {
    const report = await checkAdapter(backend, { policy: CI_POLICY, only: ['files.nested'] });
    expect(AdapterCheckReportSchema.safeParse(report).success).toBe(true);
    return { report, check: report.checks.find((c) => c.id === 'files.nested') };
  }

  it('passes the reading half, reports the writing half as not applicable with the reason, never as passed silently', async () => {
    const { report, check } = await nestedCheck(mutant(writesNothing, { capabilities: noResults }));
    expect(check?.status, check?.detail).toBe('pass');
    expect(check?.detail).toMatch(/a\/b\/c\/deep.txt was readable/);
    expect(check?.notApplicable).toBe(`writing half: the backend declares that the box writes no results: ${WHY}`);
    expect(report.summary.partlyNotApplicable).toEqual(['files.nested']);
    expect(report.summary.blockingFailed).toEqual([]);
  });

  it('still fails when the reading half is broken (nested paths flattened)', async () => {
    const flatten: EnvPatch = (env) => ({ ...writesNothing(env), putFiles: (f) => env.putFiles(f.map((x) => ({ ...x, path: basename(x.path) }))) });
    const { report, check } = await nestedCheck(mutant(flatten, { capabilities: noResults }));
    expect(check?.status).toBe('fail');
    expect(check?.detail).toMatch(/could not read a\/b\/c\/deep.txt/);
    expect(report.summary.blockingFailed).toEqual(['files.nested']);
  });

  it('fails when the declaration is false: what the program wrote came out', async () => {
    const { check } = await nestedCheck(mutant(() => ({}), { capabilities: noResults }));
    expect(check?.status).toBe('fail');
    expect(check?.detail).toMatch(/yet getFiles\("out\/x\/y\/result.txt"\) returned file/);
  });

  it('without the declaration a box that writes nothing fails files.nested', async () => {
    const { check } = await nestedCheck(mutant(writesNothing));
    expect(check?.status).toBe('fail');
    expect(check?.notApplicable).toBeUndefined();
  });
});
