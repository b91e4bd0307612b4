import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { SandcheckError } from '../../core/errors.js';
import { MAX_LINE_BYTES, RpcLineSchema, type RpcMethod } from './protocol.js';

const STDERR_KEEP = 4096;
const EXIT_WAIT_MS = 10_000;

interface Pending {
  method: RpcMethod;
  resolve(result: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export type OutputHandler = (stream: 'stdout' | 'stderr', data: Buffer) => void;

/** Splits a byte stream into lines, refusing any line longer than the bound (a hostile adapter cannot fill our memory). */
class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onTooLong: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      if (this.size + piece.length > this.maxBytes) return this.onTooLong();
      const line = this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]);
      this.parts = [];
      this.size = 0;
      start = nl + 1;
      this.onLine(line.toString('utf8'));
    }
    const rest = chunk.subarray(start);
    if (this.size + rest.length > this.maxBytes) return this.onTooLong();
    if (rest.length > 0) {
      this.parts.push(Buffer.from(rest));
      this.size += rest.length;
    }
  }
}

/**
 * The adapter process and the JSON-lines conversation with it: requests by id, responses validated
 * against the protocol, output events routed to the exec they belong to, a bound on every call. Any
 * breach (exit, a line that is not the protocol, a missed bound) ends the adapter and fails every call.
 */
export class RpcConnection {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly outputs = new Map<string, OutputHandler>();
  private stderrTail = '';
  private failure: SandcheckError | undefined;
  private readonly exited: Promise<void>;
  private readonly unregister: () => void;

  private constructor(
    private readonly child: ChildProcess,
    private readonly label: string,
  ) {
    this.exited = new Promise((resolve) => child.once('close', () => resolve()));
    child.once('error', (err) => this.fail('ADAPTER_UNRESPONSIVE', `could not start: ${err.message}`));
    child.once('exit', (code, signal) => this.fail('ADAPTER_UNRESPONSIVE', `exited (${signal ?? `status ${code}`})`));
    const splitter = new LineSplitter(
      MAX_LINE_BYTES,
      (l) => this.onLine(l),
      () => this.fail('ADAPTER_PROTOCOL', `wrote a line longer than ${MAX_LINE_BYTES} bytes`),
    );
    child.stdout?.on('data', (chunk: Buffer) => splitter.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_KEEP);
    });
    // A write after the adapter died must not crash the harness: the exit handler already failed the calls.
    child.stdin?.on('error', () => undefined);
    // Not on signals: an interrupted run still destroys its environments through the adapter before it exits.
    const onExit = (): void => this.killGroup();
    process.once('exit', onExit);
    this.unregister = () => process.off('exit', onExit);
  }

  /** Starts the adapter in a process group of its own (so everything it started can be ended with it). */
  static start(argv: readonly string[], options: { env: Readonly<Record<string, string>>; cwd: string }): RpcConnection {
    const [cmd, ...args] = argv;
    if (cmd === undefined) throw new SandcheckError('USAGE', 'rpc: needs a command, e.g. --backend "rpc:python3 my_adapter.py"');
    const child = spawn(cmd, args, { cwd: options.cwd, env: { ...options.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    return new RpcConnection(child, argv.join(' '));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends one request and waits for its response, at most `timeoutMs`; the result is validated with `schema`. */
  call<T extends z.ZodType>(method: RpcMethod, params: Record<string, unknown>, timeoutMs: number, schema: T): Promise<z.infer<T>> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => this.fail('ADAPTER_UNRESPONSIVE', `did not answer ${method} within ${timeoutMs} ms`), timeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      this.child.stdin?.write(`${JSON.stringify({ id, method, params })}\n`);
    }).then((result) => {
      const parsed = schema.safeParse(result);
      if (!parsed.success) {
        const err = this.fail('ADAPTER_PROTOCOL', `answered ${method} with a result that is not the protocol's:\n${z.prettifyError(parsed.error)}`);
        throw err;
      }
      return parsed.data as z.infer<T>;
    });
  }

  onOutput(execId: string, handler: OutputHandler): () => void {
    this.outputs.set(execId, handler);
    return () => this.outputs.delete(execId);
  }

  /** Asks the adapter to shut down (destroying its environments), then ends it and everything in its group. */
  async close(shutdownMs: number): Promise<void> {
    if (!this.failure) {
      await this.call('shutdown', {}, shutdownMs, z.unknown()).catch(() => undefined);
      this.child.stdin?.end();
      await Promise.race([this.exited, sleep(EXIT_WAIT_MS, undefined, { ref: false })]);
    }
    this.killGroup();
    this.failure ??= new SandcheckError('ADAPTER_UNRESPONSIVE', `the adapter ${this.label} was closed`);
    this.unregister();
    await Promise.race([this.exited, sleep(EXIT_WAIT_MS, undefined, { ref: false })]);
  }

  private killGroup(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  private onLine(text: string): void {
    if (this.failure || text.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.fail('ADAPTER_PROTOCOL', `wrote a line that is not JSON: ${JSON.stringify(text.slice(0, 120))}`);
      return;
    }
    const parsed = RpcLineSchema.safeParse(raw);
    if (!parsed.success) {
      this.fail('ADAPTER_PROTOCOL', `wrote a line that is not the protocol's (${JSON.stringify(text.slice(0, 120))}):\n${z.prettifyError(parsed.error)}`);
      return;
    }
    const line = parsed.data;
    if ('event' in line) {
      if (line.event === 'output') this.outputs.get(line.execId)?.(line.stream, Buffer.from(line.data, 'base64'));
      return;
    }
    const p = this.pending.get(line.id);
    if (!p) {
      this.fail('ADAPTER_PROTOCOL', `answered request ${line.id}, which was never sent or was already answered`);
      return;
    }
    this.pending.delete(line.id);
    clearTimeout(p.timer);
    if ('error' in line) {
      const { code, message, hint } = line.error;
      const known = code === 'BACKEND_UNAVAILABLE' || code === 'CONFIG_INVALID' ? code : 'ADAPTER_ERROR';
      p.reject(
        new SandcheckError(known, `${this.label}: ${p.method}: ${known === 'ADAPTER_ERROR' ? `${code}: ` : ''}${message}`, hint === undefined ? {} : { hint }),
      );
    } else p.resolve(line.result);
  }

  /** Ends the adapter for good: every open and later call fails with this error. */
  private fail(code: 'ADAPTER_UNRESPONSIVE' | 'ADAPTER_PROTOCOL', what: string): SandcheckError {
    if (this.failure) return this.failure;
    const tail = this.stderrTail.trim();
    this.failure = new SandcheckError(code, `the adapter ${this.label} ${what}`, {
      hint: `${tail ? `its last stderr:\n${tail.split('\n').slice(-15).join('\n')}\n` : ''}see docs/rpc-protocol.md; \`sandcheck adapter check --backend "rpc:${this.label}"\` tests it alone`,
    });
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.failure);
    }
    this.pending.clear();
    this.killGroup();
    return this.failure;
  }
}
