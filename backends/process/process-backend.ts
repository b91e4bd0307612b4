import { lstat, mkdir, mkdtemp, readFile, rm, writeFile, chmod } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import type { Policy } from '../../harness/model/policy.js';
import { SandcheckError } from '../../harness/errors.js';
import { findProcessesWithEnvMarker, killPids } from '../../lab/process-scan.js';
import type {
  Backend,
  BackendContext,
  Capabilities,
  Environment,
  ExecRequest,
  ExecResult,
  GotFile,
  Leftovers,
  PutFile,
} from '../contract.js';

export const ENV_MARKER = 'SANDCHECK_ENV';
const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';
const STDIO_GRACE_MS = 500;

function insideWorkspace(root: string, rel: string): string {
  const abs = resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + sep)) {
    throw new SandcheckError('HARNESS', `path "${rel}" leaves the workspace`);
  }
  return abs;
}

class ProcessEnvironment implements Environment {
  readonly id: string;
  private destroyed = false;
  private readonly live = new Set<number>();

  constructor(
    readonly root: string,
    private readonly ctx: BackendContext,
  ) {
    this.id = `${ctx.runId}-${randomBytes(3).toString('hex')}`;
  }

  get workspace(): string {
    return join(this.root, 'work');
  }

  async putFiles(files: readonly PutFile[]): Promise<void> {
    for (const f of files) {
      const abs = insideWorkspace(this.workspace, f.path);
      await mkdir(dirname(abs), { recursive: true });
      await writeFile(abs, f.content);
      // Explicit chmod: the umask would otherwise trim the mode (and setuid bits must be exact).
      await chmod(abs, f.readOnly ? 0o444 : (f.mode ?? 0o644));
    }
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    const [file, ...args] = req.argv;
    if (file === undefined) throw new SandcheckError('HARNESS', 'exec needs a non-empty argv');
    // The control: a clean base plus the controller's environment (decoy credentials included), nothing else.
    const env: Record<string, string> = {
      PATH: BASE_PATH,
      HOME: this.workspace,
      LANG: 'C.UTF-8',
      ...this.ctx.controllerEnv,
      ...req.env,
      [ENV_MARKER]: this.id,
    };
    const child = execa(file, args, {
      cwd: req.cwd ? insideWorkspace(this.workspace, req.cwd) : this.workspace,
      env,
      extendEnv: false,
      detached: true,
      buffer: false,
      reject: false,
      stdin: req.stdin ? 'pipe' : 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      encoding: 'buffer',
      cleanup: false,
    });
    const pid = child.pid;
    if (pid !== undefined) this.live.add(pid);
    child.stdout?.on('data', (c: Buffer) => req.stdout.write(c));
    child.stderr?.on('data', (c: Buffer) => req.stderr.write(c));
    if (req.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(req.stdin));
    }
    const onAbort = (): void => {
      if (pid !== undefined) killGroup(pid);
      // A grandchild that left the group may still hold the pipes; let go of them after a grace.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STDIO_GRACE_MS).unref();
    };
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
    const result = await child;
    req.signal.removeEventListener('abort', onAbort);
    if (pid !== undefined) {
      killGroup(pid);
      this.live.delete(pid);
    }
    const startFailed = result.failed && result.exitCode === undefined && result.signal === undefined;
    return {
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      ...(startFailed ? { startError: result.originalMessage || result.shortMessage } : {}),
      timedOut: false,
      oomKilled: 'unknown',
      outputTruncated: false,
    };
  }

  async getFiles(paths: readonly string[], options: { maxBytesPerFile: number }): Promise<GotFile[]> {
    const out: GotFile[] = [];
    for (const path of paths) {
      const abs = insideWorkspace(this.workspace, path);
      let st;
      try {
        st = await lstat(abs);
      } catch {
        out.push({ path, kind: 'missing', size: 0 });
        continue;
      }
      if (st.isSymbolicLink()) out.push({ path, kind: 'symlink', size: st.size, note: 'links are never followed' });
      else if (st.isDirectory()) out.push({ path, kind: 'directory', size: st.size });
      else if (!st.isFile()) out.push({ path, kind: 'other', size: st.size });
      else if (st.size > options.maxBytesPerFile) out.push({ path, kind: 'file', size: st.size, note: `larger than ${options.maxBytesPerFile} bytes; not read` });
      else out.push({ path, kind: 'file', size: st.size, content: await readFile(abs) });
    }
    return out;
  }

  async hostPids(): Promise<number[]> {
    return (await findProcessesWithEnvMarker(ENV_MARKER, this.id)).map((p) => p.pid);
  }

  async destroy(): Promise<Leftovers> {
    if (this.destroyed) return { items: [] };
    this.destroyed = true;
    for (const pid of this.live) killGroup(pid);
    const strays = await findProcessesWithEnvMarker(ENV_MARKER, this.id);
    killPids(strays.map((p) => p.pid));
    await rm(this.root, { recursive: true, force: true });
    return { items: strays.map((p) => `process ${p.pid} (${p.command}) outlived its group; killed`) };
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Group already gone.
  }
}

export class ProcessBackend implements Backend {
  readonly name = 'process';
  readonly description = 'unsandboxed control: a plain host process in a temp workspace (no isolation at all)';

  capabilities(_policy: Policy): Capabilities {
    return { isolation: 'none', enforces: [] };
  }

  async preflight(): Promise<void> {
    if (process.platform !== 'linux' && process.platform !== 'darwin') {
      throw new SandcheckError('BACKEND_UNAVAILABLE', `the process backend needs a POSIX host (got ${process.platform})`);
    }
  }

  async create(_policy: Policy, ctx: BackendContext): Promise<Environment> {
    const root = await mkdtemp(join(ctx.scratchDir, 'env-'));
    const env = new ProcessEnvironment(root, ctx);
    await mkdir(env.workspace, { recursive: true });
    return env;
  }
}
