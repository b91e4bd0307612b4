import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { execa, type Options, type ResultPromise } from 'execa';
import { DECOY_ADDRESSES, type DecoyAddress } from './addresses.js';
import { nsenterArgv, type NetnsRef } from './enter.js';
import { LabError } from './errors.js';
import { onProcessExit } from './exit-hook.js';
import { identify, isAlive, readBootId, type ProcIdentity } from './proc.js';
import { LAB_STATE_DIR, claimOwnership, readOwnership, removeOwnership, scratchDirFor, type LabOwnership } from './state.js';
import { assertLabSupport } from './support.js';
import { netnsInode, teardownNamespace, teardownNamespaceSync, type TeardownReport, type TeardownTarget } from './teardown.js';
import { findTool } from './tools.js';

export const LAB_PREFIX = 'sc-';
export const RUN_ID_PATTERN = /^[a-z0-9]{1,12}$/;
export const LAB_NAME_PATTERN = /^sc-[a-z0-9]{1,12}$/;

export interface LabDestroyReport extends TeardownReport {
  /** `true` when an earlier `destroy()` already did the work. */
  readonly alreadyDestroyed: boolean;
  readonly durationMs: number;
}

// execa types its result on `{} & O` (its defaults merged with the caller's options).
export type LabSubprocess<O extends Options> = ResultPromise<{} & O>;

export interface LabNamespace extends NetnsRef {
  readonly runId: string;
  /** nsfs inode of the namespace: `/proc/<pid>/ns/net` of every process inside reads `net:[<inode>]`. */
  readonly inode: number;
  readonly addresses: readonly DecoyAddress[];
  /** Per-lab dir (resolv.conf and the like) under the state dir, removed by `destroy()` or a sweep. */
  readonly scratchDir: string;
  readonly createMs: number;
  readonly destroyed: boolean;
  /** Runs `argv` inside the lab through nsenter; `destroy()` stops it if it is still running. */
  spawn<O extends Options = Options>(argv: readonly string[], options?: O): LabSubprocess<O>;
  /** Puts a process started elsewhere under the lab's teardown (e.g. a sandbox that left the namespace). */
  adopt(pid: number): Promise<void>;
  /** Idempotent: stops everything the lab started, then `ip netns del`. */
  destroy(): Promise<LabDestroyReport>;
}

export interface CreateLabOptions {
  readonly runId: string;
  /** Ownership records; tests point this elsewhere. */
  readonly stateDir?: string;
  /** SIGTERM → SIGKILL grace for processes left in the lab at destroy. */
  readonly graceMs?: number;
}

export function validateRunId(runId: string): string {
  if (!RUN_ID_PATTERN.test(runId)) {
    throw new LabError('LAB_INVALID_RUN_ID', `Expected a run id of 1–12 characters [a-z0-9], got ${JSON.stringify(runId)}`, {
      hint: 'use randomRunId() or the harness run id',
    });
  }
  return runId;
}

export function labNameFor(runId: string): string {
  return `${LAB_PREFIX}${validateRunId(runId)}`;
}

export function randomRunId(length = 8): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(length)].map((b) => alphabet[b % alphabet.length]).join('');
}

function setupScript(addresses: readonly DecoyAddress[]): string {
  const lines = ['link set lo up'];
  for (const a of addresses) lines.push(`addr add ${a.cidr} dev lo${a.family === 6 ? ' nodad' : ''}`);
  // Every address is local inside the lab, so any destination is answered here and nothing can route out.
  lines.push('route add local 0.0.0.0/0 dev lo', 'route add local ::/0 dev lo');
  return `${lines.join('\n')}\n`;
}

/** Claims the name through its ownership record; a dead run's record without a namespace is taken over. */
async function claim(record: LabOwnership, path: string, stateDir: string): Promise<void> {
  const exists = (await netnsInode(path)) !== undefined;
  if (!exists && (await claimOwnership(record, stateDir))) return;
  const owner = await readOwnership(record.name, stateDir);
  const ownerAlive = typeof owner === 'object' && (await isAlive({ pid: owner.ownerPid, startTime: owner.ownerStartTime }));
  if (!exists && !ownerAlive) {
    await removeOwnership(record.name, stateDir);
    if (await claimOwnership(record, stateDir)) return;
  }
  throw new LabError('LAB_EXISTS', `lab namespace ${record.name} already exists`, {
    hint: ownerAlive ? 'another live run uses this run id; pick another' : 'a dead run left it behind: call sweepStaleLabs()',
  });
}

async function runIp(args: readonly string[], input?: string): Promise<void> {
  const ip = findTool('ip') ?? 'ip';
  const result = await execa(ip, args, { reject: false, timeout: 10_000, ...(input === undefined ? {} : { input }) });
  if (result.exitCode === 0) return;
  const stderr = result.stderr.trim();
  const denied = /Operation not permitted|Permission denied/.test(stderr);
  const message = `ip ${args.join(' ')} failed: ${stderr || `exit ${String(result.exitCode)}`}`;
  throw new LabError(denied ? 'LAB_UNAVAILABLE' : 'LAB_SETUP_FAILED', message, {
    hint: denied ? 'run as root with CAP_NET_ADMIN and CAP_SYS_ADMIN' : 'see the ip error above',
  });
}

/** Creates the sealed lab namespace `sc-<runId>` with the decoy addresses on `lo` and catch-all local routes. */
export async function createLabNamespace(options: CreateLabOptions): Promise<LabNamespace> {
  const started = performance.now();
  const name = labNameFor(options.runId);
  const path = `/run/netns/${name}`;
  const stateDir = options.stateDir ?? LAB_STATE_DIR;
  await assertLabSupport({ requireWitness: false });
  const self = await identify(process.pid);
  if (self === undefined) throw new LabError('LAB_UNAVAILABLE', 'cannot read /proc/self/stat', { hint: 'mount /proc' });
  // Recorded before the namespace exists, so a crash at any later point leaves a record sweepStaleLabs() can act on.
  const record: LabOwnership = {
    version: 1,
    name,
    runId: options.runId,
    ownerPid: self.pid,
    ownerStartTime: self.startTime,
    bootId: await readBootId(),
    createdAt: new Date().toISOString(),
  };
  await claim(record, path, stateDir);
  try {
    await runIp(['netns', 'add', name]);
  } catch (err) {
    await removeOwnership(name, stateDir);
    throw err;
  }
  const scratchDir = scratchDirFor(name, stateDir);
  let inode: number | undefined;
  try {
    await runIp(['-n', name, '-batch', '-'], setupScript(DECOY_ADDRESSES));
    inode = await netnsInode(path);
    if (inode === undefined) throw new LabError('LAB_SETUP_FAILED', `${path} vanished during setup`);
    await mkdir(scratchDir, { recursive: true, mode: 0o755 });
  } catch (err) {
    await teardownNamespace({ name, path, stateDir }).catch(() => undefined);
    throw err;
  }
  const graceMs = options.graceMs ?? 1000;
  return new Lab({ name, path, runId: options.runId, inode, scratchDir, stateDir, graceMs, createMs: performance.now() - started });
}

interface LabInit {
  name: string;
  path: string;
  runId: string;
  inode: number;
  scratchDir: string;
  stateDir: string;
  graceMs: number;
  createMs: number;
}

class Lab implements LabNamespace {
  readonly name: string;
  readonly path: string;
  readonly runId: string;
  readonly inode: number;
  readonly scratchDir: string;
  readonly createMs: number;
  readonly addresses = DECOY_ADDRESSES;
  readonly #stateDir: string;
  readonly #graceMs: number;
  readonly #tracked: ProcIdentity[] = [];
  readonly #pending = new Set<Promise<void>>();
  readonly #unhook: () => void;
  #destroying: Promise<LabDestroyReport> | undefined;

  constructor(init: LabInit) {
    this.name = init.name;
    this.path = init.path;
    this.runId = init.runId;
    this.inode = init.inode;
    this.scratchDir = init.scratchDir;
    this.createMs = init.createMs;
    this.#stateDir = init.stateDir;
    this.#graceMs = init.graceMs;
    this.#unhook = onProcessExit(() => teardownNamespaceSync({ ...this.#target(), inode: this.inode }));
  }

  get destroyed(): boolean {
    return this.#destroying !== undefined;
  }

  spawn<O extends Options = Options>(argv: readonly string[], options?: O): LabSubprocess<O> {
    if (this.destroyed) throw new LabError('LAB_DESTROYED', `lab ${this.name} is destroyed; cannot start ${argv[0] ?? ''}`);
    const [file, ...args] = nsenterArgv(this, argv);
    const child = execa<O>(file ?? 'nsenter', args, options);
    // Marks the promise handled: destroy() killing it must not surface as an unhandled rejection.
    child.catch(() => undefined);
    if (child.pid !== undefined) void this.adopt(child.pid);
    return child;
  }

  adopt(pid: number): Promise<void> {
    const pending = identify(pid).then((id) => {
      if (id !== undefined) this.#tracked.push(id);
    });
    this.#pending.add(pending);
    void pending.finally(() => this.#pending.delete(pending));
    return pending;
  }

  destroy(): Promise<LabDestroyReport> {
    if (this.#destroying !== undefined) {
      return this.#destroying.then((report) => ({ ...report, alreadyDestroyed: true }));
    }
    this.#destroying = this.#teardown();
    return this.#destroying;
  }

  async #teardown(): Promise<LabDestroyReport> {
    const started = performance.now();
    await Promise.all(this.#pending);
    const report = await teardownNamespace(this.#target(), this.#graceMs);
    this.#unhook();
    return { ...report, alreadyDestroyed: false, durationMs: performance.now() - started };
  }

  #target(): TeardownTarget {
    return { name: this.name, path: this.path, stateDir: this.#stateDir, tracked: this.#tracked };
  }
}
