import { SandcheckError } from '../../core/errors.js';
import type { Policy } from '../../model/policy.js';
import type { Backend, BackendContext, Capabilities, Environment, ExecRequest, ExecResult, GotFile, Leftovers, PutFile } from '../../model/backend-contract.js';
import { TeardownOnce } from '../shared/teardown.js';
import type { RpcConnection } from './connection.js';
import {
  CapabilitiesResultSchema,
  CreateResultSchema,
  DestroyResultSchema,
  EmptyResultSchema,
  ExecResultSchema,
  GetResultSchema,
  HostPidsResultSchema,
  type HelloResult,
} from './protocol.js';

const CALL_MS = 60_000;
const CREATE_MS = 120_000;
const EXEC_GRACE_MS = 60_000;
const SHUTDOWN_MS = 30_000;

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/** Starts an adapter process with the given environment and greets it. */
export type StartAdapter = (env: Readonly<Record<string, string>>) => Promise<{ conn: RpcConnection; hello: HelloResult }>;

/**
 * A Backend whose every call is a request to an adapter process (docs/rpc-protocol.md). The process
 * started at load (with PATH only) answers claims, preflight and the adapter check; each run starts
 * its own process with the run's controller environment (the decoy credentials a control plane holds),
 * so a leak of the adapter's environment into a box is caught.
 */
export class RpcBackend implements Backend {
  readonly name: string;
  readonly description: string;
  private readonly caps = new Map<string, Capabilities>();
  private execSeq = 0;
  private runConn: { conn: RpcConnection; hello: HelloResult } | undefined;

  constructor(
    private readonly control: { conn: RpcConnection; hello: HelloResult },
    private readonly start: StartAdapter,
    command: string,
  ) {
    this.name = control.hello.name;
    this.description = `rpc adapter \`${command}\`${control.hello.description ? `: ${control.hello.description}` : ''}`;
  }

  private get current(): { conn: RpcConnection; hello: HelloResult } {
    return this.runConn ?? this.control;
  }

  async openRun(ctx: { runId: string; controllerEnv?: Readonly<Record<string, string>> }): Promise<{ close(): Promise<Leftovers> }> {
    if (!ctx.controllerEnv) return { close: () => Promise.resolve({ items: [] }) };
    const started = await this.start(ctx.controllerEnv);
    if (started.hello.name !== this.name) {
      await started.conn.close(SHUTDOWN_MS);
      throw new SandcheckError('ADAPTER_PROTOCOL', `the adapter called itself "${this.name}" at load and "${started.hello.name}" for run ${ctx.runId}`);
    }
    this.runConn = started;
    return {
      close: async () => {
        this.runConn = undefined;
        await started.conn.close(SHUTDOWN_MS);
        return { items: [] };
      },
    };
  }

  /** Claims come from the adapter, once per policy: the harness calls prepare() before capabilities(). */
  async prepare(policy: Policy): Promise<void> {
    const key = JSON.stringify(policy);
    if (this.caps.has(key)) return;
    const c = await this.current.conn.call('capabilities', { policy }, CALL_MS, CapabilitiesResultSchema);
    this.caps.set(key, {
      isolation: c.isolation,
      enforces: c.enforces,
      ...(c.notEnforcedReasons ? { notEnforcedReasons: c.notEnforcedReasons } : {}),
      ...(c.notObservable ? { notObservable: c.notObservable } : {}),
      ...(c.boxNetwork ? { boxNetwork: c.boxNetwork } : {}),
      ...(c.noWrittenResults ? { noWrittenResults: c.noWrittenResults } : {}),
    });
  }

  capabilities(policy: Policy): Capabilities {
    const caps = this.caps.get(JSON.stringify(policy));
    if (!caps) throw new SandcheckError('HARNESS', `the rpc adapter's claims for policy "${policy.name}" were not fetched: call backend.prepare(policy) first`);
    return caps;
  }

  async preflight(): Promise<void> {
    await this.current.conn.call('preflight', {}, CALL_MS, EmptyResultSchema);
  }

  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const { conn, hello } = this.current;
    const r = await conn.call(
      'create',
      { policy, runId: ctx.runId, lab: ctx.lab ? { netnsPath: ctx.lab.netnsPath, resolvConfPath: ctx.lab.resolvConfPath } : null },
      CREATE_MS,
      CreateResultSchema,
    );
    return new RpcEnvironment(conn, r.envId, r.hostWorkspace, hello.features.includes('hostPids'), () => `x${++this.execSeq}`);
  }

  /** Shuts the adapters down (each destroys what it still holds) and ends their process groups. */
  async dispose(): Promise<void> {
    await Promise.all([this.runConn?.conn.close(SHUTDOWN_MS), this.control.conn.close(SHUTDOWN_MS)]);
    this.runConn = undefined;
  }
}

class RpcEnvironment implements Environment {
  private readonly teardown = new TeardownOnce();
  readonly hostPids?: () => Promise<number[]>;

  constructor(
    private readonly conn: RpcConnection,
    readonly id: string,
    readonly hostWorkspace: string | undefined,
    withHostPids: boolean,
    private readonly nextExecId: () => string,
  ) {
    if (withHostPids) this.hostPids = async () => (await this.conn.call('hostPids', { envId: this.id }, CALL_MS, HostPidsResultSchema)).pids;
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    const wire = files.map((f) => ({
      path: f.path,
      data: b64(f.content),
      ...(f.mode !== undefined ? { mode: f.mode } : {}),
      ...(f.readOnly !== undefined ? { readOnly: f.readOnly } : {}),
    }));
    await this.conn.call('put', { envId: this.id, files: wire }, CALL_MS, EmptyResultSchema);
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    const execId = this.nextExecId();
    const off = this.conn.onOutput(execId, (stream, data) => (stream === 'stdout' ? req.stdout : req.stderr).write(data));
    const abort = (): void => void this.conn.call('abort', { execId }, CALL_MS, EmptyResultSchema).catch(() => undefined);
    if (req.signal.aborted) abort();
    else req.signal.addEventListener('abort', abort, { once: true });
    try {
      const r = await this.conn.call(
        'exec',
        {
          envId: this.id,
          execId,
          argv: [...req.argv],
          ...(req.stdin ? { stdin: b64(req.stdin) } : {}),
          env: { ...(req.env ?? {}) },
          ...(req.cwd !== undefined ? { cwd: req.cwd } : {}),
          timeoutMs: Math.max(1, Math.round(req.timeoutMs)),
          maxOutputBytes: Math.max(1, req.maxOutputBytes),
        },
        req.timeoutMs + EXEC_GRACE_MS,
        ExecResultSchema,
      );
      return {
        exitCode: r.exitCode,
        signal: r.signal,
        ...(r.startError !== undefined ? { startError: r.startError } : {}),
        timedOut: r.timedOut,
        oomKilled: r.oomKilled,
        outputTruncated: r.outputTruncated,
        ...(r.resources ? { resources: r.resources } : {}),
      };
    } finally {
      req.signal.removeEventListener('abort', abort);
      off();
    }
  }

  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    const r = await this.conn.call('get', { envId: this.id, paths: [...paths], maxBytesPerFile: options.maxBytesPerFile }, CALL_MS, GetResultSchema);
    return r.files.map((f) => {
      const content = f.data === undefined ? undefined : Buffer.from(f.data, 'base64');
      // What the adapter returned is hostile data too: never more than was asked for.
      if (content && content.length > options.maxBytesPerFile)
        throw new SandcheckError('ADAPTER_PROTOCOL', `get returned ${content.length} bytes of ${f.path}, more than maxBytesPerFile ${options.maxBytesPerFile}`);
      return {
        path: f.path,
        kind: f.kind,
        size: f.size,
        ...(content ? { content: new Uint8Array(content) } : {}),
        ...(f.linkTarget !== undefined ? { linkTarget: f.linkTarget } : {}),
        ...(f.nlink !== undefined ? { nlink: f.nlink } : {}),
        ...(f.note !== undefined ? { note: f.note } : {}),
      };
    });
  }

  destroy(): Promise<Leftovers> {
    return this.teardown.run(async () => ({ items: (await this.conn.call('destroy', { envId: this.id }, CREATE_MS, DestroyResultSchema)).leftovers }));
  }
}
