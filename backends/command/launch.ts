import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import type { ExecRequest } from '../../model/backend-contract.js';
import { inheritableFds } from '../bwrap/host-proc.js';
import { StatusReader } from '../bwrap/status.js';
import { killQuietly } from '../shared/process-kill.js';
import type { StatusSource } from './config.js';

/**
 * Starting the tool for one exec. The harness keeps its own process group (the launcher leads one), its
 * own wall clock (request.timeoutMs), its own output cap (request.maxOutputBytes) and abort; the outcome
 * comes from the tool's out-of-band status where it has one, else the launcher's exit status. Nothing
 * is ever read from the box's stderr to decide an outcome.
 */
const STDIO_GRACE_MS = 500;
/** Exit status of the launcher when it could not put itself into the counting cgroup. */
const LAUNCH_CGROUP_FAILED = 125;
const LAUNCH_ERROR_FD = 3;

/** Joins each cgroup.procs file, reports a failure on its own fd, closes that fd unless it is the tool's status fd, execs the tool. */
const LAUNCH_SCRIPT = [
  'n=$1; e=$2; keep=$3; shift 3',
  'while [ "$n" -gt 0 ]; do',
  `  if ! { echo $$ > "$1"; } 2>/dev/null; then echo '{ "sandcheck-launch-error": "cannot join the counting cgroup" }' >&$e; exit ${LAUNCH_CGROUP_FAILED}; fi`,
  '  shift; n=$((n - 1))',
  'done',
  '[ "$keep" = keep ] || eval "exec $e>&-"',
  'exec "$@"',
].join('\n');

export interface Running {
  launcherPid: number | undefined;
  /** The tool's status channel, once the launcher started. */
  status: StatusReader | undefined;
  stop(why: 'destroy'): Promise<void>;
  done: Promise<void>;
}

export interface LaunchOutcome {
  exit: { code: number | null; signal: string | null };
  spawnError?: string;
  launchError?: string;
  /** The program's outcome from the tool's out-of-band status. */
  statusExit?: { code: number | null; signal: string | null };
  /** The tool has a status channel (so its silence means a setup failure). */
  statusExpected: boolean;
  claimedOom?: boolean;
  stoppedBy: 'timeout' | 'output' | 'abort' | 'destroy' | undefined;
  truncated: boolean;
}

const StatusFileSchema = z.looseObject({
  exitCode: z.number().int().optional(),
  'exit-code': z.number().int().optional(),
  signal: z.union([z.string().regex(/^SIG[A-Z0-9]+$/), z.number().int().positive()]).optional(),
  oomKilled: z.boolean().optional(),
});

async function readStatusFile(file: string): Promise<{ exit?: { code: number | null; signal: string | null }; oom?: boolean }> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).slice(0, 64 * 1024);
  } catch {
    return {};
  }
  let parsed;
  try {
    parsed = StatusFileSchema.safeParse(JSON.parse(text));
  } catch {
    return {};
  }
  if (!parsed.success) return {};
  const d = parsed.data;
  const code = d.exitCode ?? d['exit-code'];
  const signal = typeof d.signal === 'number' ? `signal ${d.signal}` : (d.signal ?? null);
  return {
    ...(code !== undefined || signal !== null ? { exit: { code: code ?? null, signal } } : {}),
    ...(d.oomKilled !== undefined ? { oom: d.oomKilled } : {}),
  };
}

export async function launch(o: {
  req: ExecRequest;
  command: string[];
  env: Record<string, string>;
  statusSource: StatusSource | undefined;
  statusFile: string;
  stdin: 'pipe' | 'none';
  procsFiles: readonly string[];
  /** The launcher's working directory: the configuration file's, so helper scripts beside it are found. */
  cwd: string;
  running: Running;
  killAll(): Promise<void>;
}): Promise<LaunchOutcome> {
  const { req } = o;
  const statusFd = o.statusSource?.format === 'bwrap-json' ? o.statusSource.fd : undefined;
  const errFd = statusFd ?? LAUNCH_ERROR_FD;
  await rm(o.statusFile, { force: true });
  const stdio: (number | 'pipe' | 'ignore')[] = [o.stdin === 'pipe' && req.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'];
  for (let i = 3; i <= Math.max(errFd, LAUNCH_ERROR_FD); i++) stdio.push('ignore');
  stdio[errFd] = 'pipe';
  // Descriptors the harness inherited from its own parent would otherwise pass into the tool and the box.
  const leaked = (await inheritableFds()).filter((fd) => fd >= stdio.length);
  const devNull = leaked.length > 0 ? openSync('/dev/null', 'r') : undefined;
  for (const fd of leaked) {
    for (let i = stdio.length; i < fd; i++) stdio.push('ignore');
    stdio[fd] = devNull ?? 'ignore';
  }
  const args = [
    '-c',
    LAUNCH_SCRIPT,
    'sandcheck-launch',
    String(o.procsFiles.length),
    String(errFd),
    statusFd !== undefined ? 'keep' : 'close',
    ...o.procsFiles,
    ...o.command,
  ];
  const child = spawn('/bin/sh', args, { env: o.env, cwd: o.cwd, stdio, detached: true });
  if (devNull !== undefined) closeSync(devNull);
  const exitP = new Promise<{ code: number | null; signal: string | null; error?: string }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: null, signal: null, error: err.message }));
  });
  const closeP = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  const status = new StatusReader();
  o.running.status = status;
  o.running.launcherPid = child.pid;
  let stoppedBy: LaunchOutcome['stoppedBy'];
  let exited = false;
  let stopping: Promise<void> | undefined;
  const stop = (why: NonNullable<LaunchOutcome['stoppedBy']>): Promise<void> => {
    stoppedBy ??= why;
    stopping ??= (async () => {
      if (child.pid !== undefined && !exited) killQuietly(-child.pid);
      await o.killAll();
    })();
    return stopping;
  };
  o.running.stop = stop;
  let forwarded = 0;
  let truncated = false;
  const sink = (target: ExecRequest['stdout']) => (chunk: Buffer) => {
    if (truncated) return;
    const room = req.maxOutputBytes - forwarded;
    if (chunk.length <= room) {
      target.write(chunk);
      forwarded += chunk.length;
      return;
    }
    if (room > 0) target.write(chunk.subarray(0, room));
    forwarded += Math.max(0, room);
    truncated = true;
    void stop('output');
  };
  child.stdout?.on('data', sink(req.stdout));
  child.stderr?.on('data', sink(req.stderr));
  const statusStream = child.stdio[errFd] as Readable | undefined;
  statusStream?.on('data', (c: Buffer) => status.feed(c));
  statusStream?.on('end', () => status.end());
  if (req.stdin && child.stdin) {
    child.stdin.on('error', () => undefined);
    child.stdin.end(Buffer.from(req.stdin));
  }
  const timer = setTimeout(() => void stop('timeout'), Math.min(2 ** 31 - 1, Math.max(1, req.timeoutMs)));
  const onAbort = (): void => void stop('abort');
  req.signal.addEventListener('abort', onAbort, { once: true });
  if (req.signal.aborted) onAbort();

  const exit = await exitP;
  exited = true;
  clearTimeout(timer);
  req.signal.removeEventListener('abort', onAbort);
  // Nothing of the box outlives its exec: the launcher's group and the whole counting cgroup go now.
  if (child.pid !== undefined) killQuietly(-child.pid);
  await o.killAll();
  const grace = setTimeout(() => {
    child.stdout?.destroy();
    child.stderr?.destroy();
    statusStream?.destroy();
  }, STDIO_GRACE_MS);
  await closeP;
  clearTimeout(grace);
  status.end();
  if (stopping) await stopping;
  const fileStatus = o.statusSource?.format === 'json-file' ? await readStatusFile(o.statusFile) : {};
  const statusExit = status.exitCode !== undefined ? { code: status.exitCode, signal: null } : fileStatus.exit;
  return {
    exit: { code: exit.code, signal: exit.signal },
    ...(exit.error !== undefined && child.pid === undefined ? { spawnError: exit.error } : {}),
    ...(status.launchError !== undefined ? { launchError: status.launchError } : {}),
    ...(statusExit ? { statusExit } : {}),
    statusExpected: o.statusSource !== undefined,
    ...(fileStatus.oom !== undefined ? { claimedOom: fileStatus.oom } : {}),
    stoppedBy,
    truncated,
  };
}

/** A helper command (preflight, session create/put/get/destroy): bounded output, own group, killed at the timeout. */
export function runHelper(
  argv: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
  procsFiles: readonly string[] = [],
  cwd = '/',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const [cmd, ...rest] =
      procsFiles.length > 0 ? ['/bin/sh', '-c', LAUNCH_SCRIPT, 'sandcheck-helper', String(procsFiles.length), '2', 'keep', ...procsFiles, ...argv] : argv;
    const child = spawn(cmd ?? '', rest, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      if (stdout.length < 64 * 1024) stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 16 * 1024) stderr += c.toString('utf8');
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) killQuietly(-child.pid);
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: `${err.message}` });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (child.pid !== undefined) killQuietly(-child.pid);
      resolve({ code, stdout, stderr });
    });
  });
}
