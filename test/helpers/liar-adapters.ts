import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, rmdirSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Backend, BackendContext, Environment, ExecRequest, ExecResult, GotFile, PutFile, ResourceReport } from '../../model/backend-contract.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { processTree } from '../../backends/shared/host-proc.js';
import { procPids, procText, procBytes } from '../../core/proc-files.js';
import type { Policy } from '../../model/policy.js';

/**
 * Module adapters that lie, one trick each, and pass for a sandbox: each runs the payload as a plain host process
 * (root, no limits; every payload stops itself at its ceiling) and tells the harness something that is not so.
 *
 * - innocent-pids: `hostPids` names an innocent python (uid 65534, in tight memory and pids cgroups, the execution's
 *   arguments in its argv) instead of the payload; the counters claim every limit acted.
 * - innocent-pids-bare: the same, the innocent's argv holding nothing of the execution.
 * - blank-survivors: on destroy, every process of its boxes still alive has its argv blanked and is SIGSTOPped.
 * - hidden-daemon: the box has a mount namespace of its own; a program it runs that names a survivor gets a decoy
 *   of that name (killed on destroy) while the real one runs with neither the name nor any environment, and is
 *   SIGSTOPped on destroy.
 * - fake-timeout: at the wall it reports a kill (SIGKILL, timed out), blanks the program's argv and lets it run on.
 * - fake-timeout-hidden: the same, the program started with its arguments in a file (no nonce in argv, ever) and
 *   named honestly in hostPids.
 * - reused-workspace: each box has private /tmp, /var/tmp and /dev/shm and a home of its own, but every "fresh"
 *   environment is handed the previous one's workspace.
 */
export type LiarTrick =
  'innocent-pids' | 'innocent-pids-bare' | 'blank-survivors' | 'fake-timeout' | 'fake-timeout-hidden' | 'hidden-daemon' | 'reused-workspace';

const MiB = 2 ** 20;
const V1 = '/sys/fs/cgroup/memory';
const PIDS_V1 = '/sys/fs/cgroup/pids';
/** Every box process of a liar carries this in its environment (value: the liar environment's id). */
export const LIAR_ENV = 'SANDCHECK_TEST_LIAR';

export const liarsUsable =
  process.getuid?.() === 0 && existsSync(join(V1, 'memory.limit_in_bytes')) && existsSync(join(PIDS_V1, 'cgroup.procs')) && existsSync('/usr/bin/python3');

const claimsEverything = (p: Policy): ResourceReport => ({
  source: 'cgroup (the adapter says)',
  memoryLimitBytes: p.resources.memoryMb * MiB,
  memoryPeakBytes: p.resources.memoryMb * MiB,
  memoryFailcnt: 7,
  oomKills: 1,
  pidsLimit: p.resources.processes,
  pidsPeak: p.resources.processes,
  pidsMaxEvents: 40,
});

/** Overwrites a process's argv in its own memory with NULs: its /proc/<pid>/cmdline reads empty (root may write /proc/<pid>/mem). */
export function blankArgv(pid: number): void {
  const stat = procText(`/proc/${pid}/stat`);
  if (stat === undefined) return;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 48 and 49 (arg_start, arg_end); fields[0] is field 3.
  const [from, to] = [Number(fields[45]), Number(fields[46])];
  if (!(to > from)) return;
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/mem`, 'r+');
    writeSync(fd, Buffer.alloc(to - from), 0, to - from, from);
  } catch {
    // Gone, or not writable: the lie fails, the test shows it.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Host processes whose environment carries this liar environment's marker. */
export function liarProcesses(id: string): number[] {
  const needle = Buffer.from(`${LIAR_ENV}=${id}\0`);
  return procPids().filter((pid) => pid !== process.pid && (procBytes(`/proc/${pid}/environ`)?.includes(needle) ?? false));
}

/** The real programs hidden-daemon ran without a name, while they still run the survivor's code. */
export function hiddenPids(id: string): number[] {
  return (procText(join(tmpdir(), `${id}.pids`)) ?? '')
    .split('\n')
    .filter((l) => /^\d+$/.test(l))
    .map(Number)
    .filter((pid) => procBytes(`/proc/${pid}/cmdline`)?.includes('heartbeat') ?? false);
}

const kill = (pids: readonly number[], signal: NodeJS.Signals): void => {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
};

export class LiarBackend implements Backend {
  readonly name: string;
  readonly description = 'a lying test adapter (it passes for a sandbox)';
  /** Every environment it made, for the test's own clean-up. */
  readonly made: string[] = [];
  /** Directories it made outside the system temp directory (reused-workspace), removed by cleanUp. */
  readonly dirs: string[] = [];
  private lastWorkspace: string | undefined;
  constructor(readonly trick: LiarTrick) {
    this.name = `liar-${trick}`;
  }
  capabilities() {
    return { isolation: 'sandbox' as const, enforces: POLICY_ITEMS };
  }
  async preflight(): Promise<void> {}
  async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    const reuse = this.trick === 'reused-workspace';
    const env = new LiarEnv(this.trick, policy, ctx, reuse ? this.lastWorkspace : undefined);
    this.made.push(env.id);
    if (reuse) {
      this.lastWorkspace = env.workspace;
      this.dirs.push(env.workspace, env.home);
    }
    return env;
  }
  /** SIGKILL every process any of its environments left (stopped ones included). */
  cleanUp(): void {
    for (const id of this.made) {
      kill(liarProcesses(id), 'SIGKILL');
      kill(hiddenPids(id), 'SIGKILL');
      rmSync(join(tmpdir(), `${id}.pids`), { force: true });
    }
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Loaded by the box's python (sitecustomize): an exec whose argv names a survivor starts a decoy of that name and
 * runs the real program without the name and with an empty environment, its pid left for the adapter.
 */
const HIDE_DAEMON = `
import os, subprocess, sys
_execv = os.execv
def execv(path, argv):
    named = [a for a in argv if a.startswith("sandcheck-survivor-")]
    if named:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", named[0]], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.environ["LIAR_PIDS"], "a") as f:
            f.write("%d\\n" % os.getpid())
        os.execve(path, [a for a in argv if not a.startswith("sandcheck-survivor-")], {})
    _execv(path, argv)
os.execv = execv
`;

/** The payload run with its arguments read from a file: its argv never holds the nonce. */
const FROM_FILE =
  "import sys; sys.argv = ['payload.py', open('.liar-args').read()]; exec(compile(open('payload.py').read(), 'payload.py', 'exec'), {'__name__': '__main__'})";

let seq = 0;
/** Where reused-workspace keeps its directories: not under the temp directories its boxes get private copies of. */
const OUTSIDE_TMP = '/run';

/** A box with private /tmp, /var/tmp and /dev/shm (a mount namespace of its own, tmpfs on each). */
const PRIVATE_TMP = 'for d in /tmp /var/tmp /dev/shm; do mount -t tmpfs -o size=16m sandcheck-liar "$d" || exit 97; done; exec "$@"';

class LiarEnv implements Environment {
  readonly id = `liar${process.pid}-${++seq}`;
  private readonly dir: string;
  readonly home: string;
  private readonly cgroups: string[] = [];
  private child: ChildProcess | undefined;
  private innocent: ChildProcess | undefined;
  constructor(
    private readonly trick: LiarTrick,
    private readonly policy: Policy,
    ctx: BackendContext,
    reuse?: string,
  ) {
    const outside = trick === 'reused-workspace';
    this.dir = reuse ?? mkdtempSync(join(outside ? OUTSIDE_TMP : tmpdir(), 'sc-liar-'));
    this.home = outside ? mkdtempSync(join(OUTSIDE_TMP, 'sc-liar-home-')) : this.dir;
    if (trick.startsWith('innocent-pids')) {
      const name = `sandcheck-${ctx.runId}-${this.id}`;
      this.cgroups.push(join(V1, name), join(PIDS_V1, name));
      for (const cg of this.cgroups) mkdirSync(cg);
      writeFileSync(join(V1, name, 'memory.limit_in_bytes'), String(policy.resources.memoryMb * MiB));
      writeFileSync(join(PIDS_V1, name, 'pids.max'), String(policy.resources.processes));
    }
  }
  async putFiles(files: readonly PutFile[]): Promise<void> {
    for (const f of files) {
      mkdirSync(dirname(join(this.dir, f.path)), { recursive: true });
      writeFileSync(join(this.dir, f.path), f.content);
    }
  }
  async getFiles(paths: readonly string[]): Promise<GotFile[]> {
    return paths.map((path) => ({ path, kind: 'missing' as const, size: 0 }));
  }
  get workspace(): string {
    return this.dir;
  }
  private get hideDir(): string {
    return join(this.dir, '.liar');
  }
  async hostPids(): Promise<number[]> {
    const named = this.trick.startsWith('innocent-pids') ? this.innocent?.pid : this.child?.pid;
    return named === undefined ? [] : processTree(named);
  }
  exec(req: ExecRequest): Promise<ExecResult> {
    const hide = this.trick === 'hidden-daemon';
    if (hide) {
      mkdirSync(this.hideDir, { recursive: true });
      writeFileSync(join(this.hideDir, 'sitecustomize.py'), HIDE_DAEMON);
    }
    const env = {
      PATH: '/usr/bin:/bin',
      HOME: this.home,
      ...req.env,
      [LIAR_ENV]: this.id,
      ...(hide ? { PYTHONPATH: this.hideDir, LIAR_PIDS: join(tmpdir(), `${this.id}.pids`) } : {}),
    };
    if (this.trick.startsWith('innocent-pids')) {
      const shown = this.trick === 'innocent-pids' ? req.argv.slice(2) : [];
      // The innocent: the execution's arguments in its argv, nobody's uid, tight cgroups, and nothing to do.
      const joinCgroups = this.cgroups.map((cg) => `echo $$ > ${join(cg, 'cgroup.procs')}`).join('; ');
      this.innocent = spawn('/bin/sh', ['-c', `${joinCgroups}; exec "$@"`, 'sh', '/usr/bin/python3', '-c', 'import time; time.sleep(120)', ...shown], {
        cwd: '/',
        env,
        uid: 65534,
        gid: 65534,
        stdio: 'ignore',
      });
    }
    // hidden-daemon: a mount namespace of the box's own, as a sandbox would give it.
    const viaFile = this.trick === 'fake-timeout-hidden';
    if (viaFile) writeFileSync(join(this.dir, '.liar-args'), req.argv[2] ?? '{}');
    const [cmd, argv] = hide
      ? ['/usr/bin/unshare', ['--mount', '--propagation', 'private', '/usr/bin/python3', ...req.argv.slice(1)]]
      : this.trick === 'reused-workspace'
        ? ['/usr/bin/unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', PRIVATE_TMP, 'sh', '/usr/bin/python3', ...req.argv.slice(1)]]
        : viaFile
          ? ['/usr/bin/python3', ['-c', FROM_FILE]]
          : ['/usr/bin/python3', req.argv.slice(1)];
    const child = spawn(cmd, argv, { cwd: this.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.on('data', (c: Buffer) => req.stdout.write(c));
    child.stderr.on('data', (c: Buffer) => req.stderr.write(c));
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        if (!this.trick.startsWith('fake-timeout')) return void child.kill('SIGKILL');
        // A kill reported, none sent: the program runs on, its argv blanked.
        for (const pid of liarProcesses(this.id)) blankArgv(pid);
        resolve({ exitCode: null, signal: 'SIGKILL', timedOut: true, oomKilled: false, outputTruncated: false });
      }, req.timeoutMs);
      req.signal.addEventListener('abort', () => child.kill('SIGKILL'), { once: true });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        const resources = this.trick.startsWith('innocent-pids') ? claimsEverything(this.policy) : undefined;
        resolve({ exitCode: code, signal, timedOut: false, oomKilled: 'unknown', outputTruncated: false, ...(resources ? { resources } : {}) });
      });
    });
  }
  async destroy(): Promise<{ items: string[] }> {
    const left = liarProcesses(this.id);
    if (this.trick === 'hidden-daemon') {
      kill(left, 'SIGKILL');
      kill(hiddenPids(this.id), 'SIGSTOP');
    } else if (this.trick === 'blank-survivors') {
      // What is still alive is hidden, not killed: no argv to find it by, no heartbeat to see it by.
      for (const pid of left) blankArgv(pid);
      kill(left, 'SIGSTOP');
    } else kill(left, 'SIGKILL');
    this.innocent?.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    for (const cg of this.cgroups) if (existsSync(cg)) rmdirSync(cg);
    // reused-workspace keeps the workspace for the next "fresh" environment (its backend's cleanUp removes it).
    if (this.trick === 'reused-workspace') rmSync(this.home, { recursive: true, force: true });
    else rmSync(this.dir, { recursive: true, force: true });
    return { items: [] };
  }
}
