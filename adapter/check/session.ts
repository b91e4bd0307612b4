import { createHash, randomBytes, type Hash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Backend, BackendContext, Environment, ExecResult, LabHandle, PolicyItem, PutFile } from '../../model/backend-contract.js';
import type { Policy } from '../../model/policy.js';
import { findProcessesWithCmdline, killPids } from '../../lab/process-scan.js';
import { errorMessage } from '../../core/errors.js';

/** A ByteSink that counts and hashes everything, keeps the first `keep` bytes and notices a needle. */
export class CheckSink {
  bytes = 0;
  private readonly hash: Hash = createHash('sha256');
  private kept: Buffer[] = [];
  private keptLen = 0;
  firstByteAt: number | undefined;
  private readonly waiters: { needle: string; resolve: () => void }[] = [];
  private readonly firstByteListeners: (() => void)[] = [];

  constructor(private readonly keep = 64 * 1024) {}

  write(chunk: Uint8Array): void {
    const first = this.bytes === 0 && chunk.byteLength > 0;
    if (first) this.firstByteAt = performance.now();
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.hash.update(buf);
    this.bytes += buf.length;
    if (this.keptLen < this.keep) {
      const take = buf.subarray(0, this.keep - this.keptLen);
      this.kept.push(Buffer.from(take));
      this.keptLen += take.length;
    }
    if (first) for (const fn of this.firstByteListeners.splice(0)) fn();
    if (this.waiters.length === 0) return;
    const text = this.text();
    for (const w of [...this.waiters]) {
      if (text.includes(w.needle)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  text(): string {
    return Buffer.concat(this.kept).toString('utf8');
  }

  sha256(): string {
    return this.hash.copy().digest('hex');
  }

  /** Calls `fn` when the first byte arrives (at once if it already has). */
  onFirstByte(fn: () => void): void {
    if (this.firstByteAt !== undefined) fn();
    else this.firstByteListeners.push(fn);
  }

  /**
   * Resolves true once `needle` appeared in the kept bytes; false after `ms`, or as soon as `until` settles (e.g. the
   * run that writes here ended) without it.
   */
  waitFor(needle: string, ms: number, until?: Promise<unknown>): Promise<boolean> {
    if (this.text().includes(needle)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { needle, resolve: () => settle(true) };
      const settle = (found: boolean): void => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(found);
      };
      const timer = setTimeout(() => settle(false), ms);
      this.waiters.push(waiter);
      const ended = (): void => settle(this.text().includes(needle));
      until?.then(ended, ended);
    });
  }
}

export interface RunOptions {
  /** Python source, put in the workspace as check.py and run as `python3 check.py ...args`. */
  source?: string;
  argv?: readonly string[];
  args?: readonly string[];
  files?: readonly PutFile[];
  stdin?: Uint8Array;
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  maxOutputBytes?: number;
  /** The check's own backstop: abort the exec this long after the exec() call. */
  backstopMs?: number;
  /**
   * Re-arm the backstop when the program's first stdout byte arrives: abort the exec this long after that byte
   * instead. A bound on what the program does once it runs, never on how long the backend and the interpreter took to
   * start it (that grows with the machine's load). `backstopMs` then only bounds a program that never writes.
   */
  backstopAfterFirstByteMs?: number;
  signal?: AbortSignal;
  /** A stdout sink of the caller's, to watch the program while it runs. */
  stdout?: CheckSink;
}

export interface RunOutcome {
  result?: ExecResult;
  /** exec() threw: the message. */
  threw?: string;
  stdout: CheckSink;
  stderr: CheckSink;
  /** From the exec() call to its return, on the check's clock. */
  elapsedMs: number;
  startedAt: number;
  endedAt: number;
  /** The check's backstop fired (the backend did not stop in time by itself); see stdout.firstByteAt for which bound. */
  backstopped: boolean;
}

const DEFAULT_BACKSTOP_MS = 30_000;

/** State of one `adapter check`: the backend, the policy, the context handed to create(), what must be cleaned. */
export class CheckSession {
  /** Every nonce a check put in a program's argv: processes carrying one are ours to kill at the end. */
  private readonly nonces: string[] = [];
  private readonly live = new Set<Environment>();

  constructor(
    readonly backend: Backend,
    readonly policy: Policy,
    readonly ctx: BackendContext,
  ) {}

  nonce(kind: string): string {
    // The check's run id in every nonce: what it leaves is found and cleaned up by that id, never by a broad name.
    const n = `sandcheck-check-${this.ctx.runId}-${kind}-${randomBytes(6).toString('hex')}`;
    this.nonces.push(n);
    return n;
  }

  /** Why the box cannot write files the harness reads back, when its backend declares so. */
  noWrittenResults(): string | undefined {
    return this.backend.capabilities(this.policy).noWrittenResults;
  }

  claims(item: PolicyItem): boolean {
    return this.backend.capabilities(this.policy).enforces.includes(item);
  }

  async create(lab?: LabHandle): Promise<Environment> {
    const env = await this.backend.create(this.policy, { ...this.ctx, ...(lab ? { lab } : {}) });
    this.live.add(env);
    return env;
  }

  async destroy(env: Environment): Promise<string[]> {
    this.live.delete(env);
    return (await env.destroy()).items;
  }

  /** A fresh environment for `fn`, destroyed afterwards whatever happens. */
  async withEnv<T>(fn: (env: Environment) => Promise<T>, lab?: LabHandle): Promise<T> {
    const env = await this.create(lab);
    try {
      return await fn(env);
    } finally {
      await this.destroy(env).catch(() => undefined);
    }
  }

  /** Puts the program (and files) in, runs it once, never throws: a throw from exec() is recorded. */
  async run(env: Environment, opts: RunOptions): Promise<RunOutcome> {
    const files: PutFile[] = [...(opts.source !== undefined ? [{ path: 'check.py', content: Buffer.from(opts.source) }] : []), ...(opts.files ?? [])];
    if (files.length > 0) await env.putFiles(files);
    const stdout = opts.stdout ?? new CheckSink();
    const stderr = new CheckSink();
    const abort = new AbortController();
    let backstopped = false;
    let settled = false;
    const fire = (): void => {
      backstopped = true;
      abort.abort();
    };
    let timer = setTimeout(fire, opts.backstopMs ?? DEFAULT_BACKSTOP_MS);
    const afterFirstByte = opts.backstopAfterFirstByteMs;
    if (afterFirstByte !== undefined)
      stdout.onFirstByte(() => {
        if (settled || backstopped) return;
        clearTimeout(timer);
        timer = setTimeout(fire, afterFirstByte);
      });
    const forward = (): void => abort.abort();
    opts.signal?.addEventListener('abort', forward, { once: true });
    const startedAt = performance.now();
    let result: ExecResult | undefined;
    let threw: string | undefined;
    try {
      result = await env.exec({
        argv: opts.argv ?? ['python3', 'check.py', ...(opts.args ?? [])],
        ...(opts.stdin ? { stdin: opts.stdin } : {}),
        ...(opts.env ? { env: opts.env } : {}),
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        timeoutMs: opts.timeoutMs ?? this.policy.resources.wallSeconds * 1000,
        maxOutputBytes: opts.maxOutputBytes ?? this.policy.output.maxBytes,
        stdout,
        stderr,
        signal: abort.signal,
      });
    } catch (err) {
      threw = errorMessage(err);
    } finally {
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', forward);
    }
    const endedAt = performance.now();
    return {
      ...(result ? { result } : {}),
      ...(threw !== undefined ? { threw } : {}),
      stdout,
      stderr,
      elapsedMs: endedAt - startedAt,
      startedAt,
      endedAt,
      backstopped,
    };
  }

  /** Destroys what a failed check left and kills every process that carries one of this session's nonces. */
  async close(): Promise<string[]> {
    const notes: string[] = [];
    for (const env of [...this.live]) {
      await this.destroy(env).catch((err: unknown) => notes.push(`destroy of ${env.id} threw: ${errorMessage(err)}`));
    }
    for (const n of this.nonces) {
      const left = await findProcessesWithCmdline(n);
      killPids(left.map((p) => p.pid));
      for (const p of left) notes.push(`killed process ${p.pid} left by a check (${n})`);
    }
    return notes;
  }
}

/** One-line summary of an exec result for a detail line. */
export function describeRun(r: RunOutcome): string {
  if (r.threw !== undefined) return `exec threw: ${r.threw}`;
  const x = r.result;
  if (!x) return 'no result';
  const err = r.stderr.text().trim().split('\n').slice(-3).join(' | ').slice(0, 300);
  return `exit ${x.exitCode ?? 'none'}, signal ${x.signal ?? 'none'}${x.startError ? `, startError ${x.startError}` : ''}${err ? `, stderr: ${err}` : ''}`;
}

/** The promise's value, or undefined when it has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((res) => {
    timer = setTimeout(() => res(undefined), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
