// A deliberately BROKEN module adapter: `sandcheck adapter check --backend ./adapter.mjs` must fail
// exactly create.fresh-workspace, exec.abort and destroy.leaves-nothing (and `sandcheck run`
// refuses it). Everything else is done right. Three bugs, each one common in real adapters:
//   1. environments are not fresh: every create() reuses one workspace directory;
//   2. exec() ignores ExecRequest.signal (an abort): the program runs on until it ends;
//   3. destroy() kills only the process group it started, so a daemon that called setsid() survives.
import { spawn } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describeEntry, killGroup, segmentsOf } from 'sandcheck/adapter';

/** @returns {import('sandcheck/adapter').Backend} */
export default function createBrokenBackend() {
  return {
    name: 'example-broken',
    description: 'deliberately broken example adapter: shared workspace, abort ignored, daemons survive destroy',
    capabilities: () => ({ isolation: 'none', enforces: [] }),
    async preflight() {},
    async create(_policy, ctx) {
      // BUG 1: one directory for every environment, never emptied.
      const workspace = join(ctx.scratchDir, 'broken-shared-workspace');
      await mkdir(workspace, { recursive: true });
      return new BrokenEnvironment(workspace, ctx);
    },
  };
}

class BrokenEnvironment {
  static #count = 0;
  /** @type {Set<number>} */
  #groups = new Set();

  /** @param {string} workspace @param {import('sandcheck/adapter').BackendContext} ctx */
  constructor(workspace, ctx) {
    this.id = `${ctx.runId}-broken-${++BrokenEnvironment.#count}`;
    this.workspace = workspace;
    this.ctx = ctx;
  }

  /** @param {readonly import('sandcheck/adapter').PutFile[]} files */
  async putFiles(files) {
    for (const f of files) {
      const abs = join(this.workspace, ...segmentsOf(f.path));
      await mkdir(dirname(abs), { recursive: true });
      await writeFile(abs, f.content);
      await chmod(abs, f.readOnly ? 0o444 : (f.mode ?? 0o644));
    }
  }

  /** @param {import('sandcheck/adapter').ExecRequest} req @returns {Promise<import('sandcheck/adapter').ExecResult>} */
  async exec(req) {
    // Inside the lab when there is one: even a broken adapter must not send probe traffic from the host.
    const argv = [...(this.ctx.lab ? ['nsenter', `--net=${this.ctx.lab.netnsPath}`, '--'] : []), ...req.argv];
    const [file, ...args] = argv;
    const child = spawn(/** @type {string} */ (file), args, {
      cwd: req.cwd ? join(this.workspace, ...segmentsOf(req.cwd)) : this.workspace,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: this.workspace, LANG: 'C.UTF-8', ...req.env },
      detached: true,
      stdio: [req.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    if (child.pid !== undefined) this.#groups.add(child.pid);
    child.stdout?.on('data', (/** @type {Buffer} */ c) => req.stdout.write(c));
    child.stderr?.on('data', (/** @type {Buffer} */ c) => req.stderr.write(c));
    if (req.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(req.stdin));
    }
    // BUG 2: req.signal is never looked at.
    /** @type {{ code: number | null, signal: NodeJS.Signals | null, error?: Error }} */
    const end = await new Promise((resolve) => {
      child.on('error', (error) => resolve({ code: null, signal: null, error }));
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    if (child.pid !== undefined) this.#groups.delete(child.pid);
    return { exitCode: end.code, signal: end.signal, ...(end.error ? { startError: end.error.message } : {}), timedOut: false, oomKilled: 'unknown', outputTruncated: false };
  }

  /** @param {readonly string[]} paths @param {{ maxBytesPerFile: number }} options */
  async getFiles(paths, options) {
    return Promise.all(paths.map((p) => describeEntry(this.workspace, p, options.maxBytesPerFile, { followLinks: false })));
  }

  async destroy() {
    // BUG 3: only the groups it started; a process that left its group (setsid) lives on.
    for (const pgid of this.#groups) killGroup(pgid);
    this.#groups.clear();
    return { items: [] };
  }
}
