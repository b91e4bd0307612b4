import { stat } from 'node:fs/promises';
import { exeBasename, parentPid, procLink } from '../core/proc-files.js';
import type { Environment } from '../model/backend-contract.js';
import type { Observation } from '../model/probe.js';
import { attachPosture, postureOf, readHostView, readProcessIdentity, readProcessPosture, type HostView, type ProcessIdentity } from '../lab/host-process.js';
import { KernelCarrierTracker } from '../lab/kernel-carriers.js';
import type { UserSpaceKernel } from '../model/observation.js';
import { attachRootView, readRootView, rootViewOf } from '../lab/root-view.js';
import { describeBoxCgroup, joinCounters, readBoxCgroup, readBoxCounters, sinceFirstRead, type BoxCgroup } from '../lab/box-cgroup.js';
import type { CgroupCounters } from '../lab/cgroup-counters.js';
import type { ExecTracker } from './exec-tracker.js';

/** The box's own program: the payload's interpreter, by the executable the kernel names (never by its self-chosen comm). */
export { PAYLOAD_INTERPRETER } from '../model/payload.js';
import { PAYLOAD_INTERPRETER } from '../model/payload.js';

export interface SamplerOptions {
  intervalMs?: number;
  /** Basename of /proc/<pid>/exe of the program the harness asked the box to run. */
  program?: RegExp;
  /** Most processes whose identity is kept (a fork bomb must not grow the observation). */
  maxProcesses?: number;
  /** Most posture reads (namespaces, mountinfo, /dev, device cgroup) per sampler: each costs a few ms. */
  maxPostureReads?: number;
  /** Paths the host looks up through /proc/<pid>/root of the first processes of the box's program (lab/root-view.ts). */
  rootPaths?: readonly string[];
  /**
   * This execution's nonce, to tell the payload the host has looked: once a process of the payload's interpreter
   * whose command line carries it has its identity, posture and (with rootPaths) root view kept, it gets SIGURG on
   * every tick until it ends. SIGURG is ignored by default, so it changes nothing in a program that does not wait
   * for it; `sc.hold` does, and stops holding still.
   */
  release?: string;
  /** This execution's nonce, to find the box's address space on a user-space kernel (harness/kernel-carriers.ts). */
  nonce?: string;
  /** With `nonce`: the mark of a program the payload runs, to find that program's address space too. */
  mark?: string;
  /** Read the cgroup counters of the first process of the box's program on every tick (lab/box-cgroup.ts). */
  cgroup?: boolean;
  /**
   * The host's own record of this execution's processes: the pids the adapter names are checked against it, and only
   * those tied to this execution's nonce are sampled (the others are reported, never evidence).
   */
  tracker?: ExecTracker;
}

/** The counters of the box program's own cgroups, read by the host while it ran and once after. */
export interface HostCgroupRead {
  pid: number;
  where: string;
  counters: CgroupCounters;
}

/** How many processes of the box's program get their root looked at (each costs one lstat per path component). */
const MAX_ROOT_VIEWS = 4;

const sameIdentity = (a: ProcessIdentity, b: ProcessIdentity): boolean =>
  a.command === b.command &&
  a.realUid === b.realUid &&
  a.effectiveUid === b.effectiveUid &&
  a.capEff === b.capEff &&
  a.noNewPrivs === b.noNewPrivs &&
  a.seccomp === b.seccomp;

/**
 * Polls the box's host pids: the identity of each process of the box's own program (peak memory kept
 * current) and the most box processes alive at once. A process counts as the box's own program once
 * its executable is the payload's interpreter, or once its parent is such a process (what the payload
 * ran, e.g. a planted setuid binary): a runtime's init (runc:[2:INIT], bwrap's child before it execs)
 * runs as root for a moment before it becomes the payload, and judging it would make verdicts depend
 * on when the sampler happened to look. Each identity the program took is kept (one entry per change).
 */
export function startProcessSampler(
  env: Environment,
  options: SamplerOptions | number = {},
): {
  stop(): Promise<{
    processes: ProcessIdentity[];
    maxConcurrent: number;
    userSpaceKernel?: UserSpaceKernel;
    cgroup?: HostCgroupRead;
    unnamed?: string[];
    unlinkedNamed?: string[];
  }>;
} {
  const opts: SamplerOptions = typeof options === 'number' ? { intervalMs: options } : options;
  const program = opts.program ?? PAYLOAD_INTERPRETER;
  const maxProcesses = opts.maxProcesses ?? 64;
  /** pid → identities seen while it ran the box's program (latest last). */
  const seen = new Map<number, ProcessIdentity[]>();
  const own = new Set<number>();
  /** Own pids whose executable is the payload's interpreter (the only ones ever released). */
  const interpreter = new Set<number>();
  let kept = 0;
  let maxConcurrent = 0;
  let busy = false;
  let postureReads = 0;
  let postureReadsThisTick = 0;
  const maxPostureReads = opts.maxPostureReads ?? 8;
  let hostView: HostView | undefined;
  let rootViews = 0;
  const carriers = opts.nonce === undefined ? undefined : new KernelCarrierTracker(opts.nonce, opts.mark);
  /** The cgroups of the first process of the box's own program the host could place, and their counters so far. */
  let cg: { pid: number; at: BoxCgroup; first: CgroupCounters; counters: CgroupCounters } | undefined;
  const cgroupTried = new Set<number>();
  /** A process of the payload's interpreter whose command line (as its posture read it) names this execution. */
  const thisExecution = (pid: number): boolean => {
    const first = seen.get(pid)?.[0];
    if (!interpreter.has(pid) || first === undefined) return false;
    return opts.release === undefined || (postureOf(first)?.cmdline.includes(opts.release) ?? false);
  };
  const readCgroup = async (pids: readonly number[]): Promise<void> => {
    if (!opts.cgroup) return;
    if (!cg) {
      for (const pid of pids) {
        if (!thisExecution(pid) || cgroupTried.has(pid)) continue;
        cgroupTried.add(pid);
        const at = readBoxCgroup(pid);
        if (at) {
          // The payload holds still until this look: the first read is from before its attack.
          const first = await readBoxCounters(at);
          cg = { pid, at, first, counters: first };
          return;
        }
      }
    }
    if (cg) cg.counters = joinCounters(cg.counters, await readBoxCounters(cg.at));
  };
  /**
   * A process of the payload's interpreter whose first entry names this execution in its posture and, when the probe
   * asked for paths, in a root view too: without one (the budget spent on other processes of the program, or not
   * taken yet) the process keeps holding, at most until its cap.
   */
  const releasable = (pid: number, nonce: string): boolean => {
    const first = seen.get(pid)?.[0];
    if (first === undefined || !interpreter.has(pid) || !(postureOf(first)?.cmdline.includes(nonce) ?? false)) return false;
    // With cgroup reads asked for: once this process's cgroups were looked up (read, or found to be the harness's own).
    if (opts.cgroup && !cgroupTried.has(pid)) return false;
    return !opts.rootPaths?.length || (rootViewOf(first)?.cmdline.includes(nonce) ?? false);
  };
  const release = (pid: number): void => {
    try {
      process.kill(pid, 'SIGURG');
    } catch {
      // Gone already (ESRCH): nothing to release.
    }
  };
  /**
   * Looks up the probe's paths in the root of a process's first entry while it still runs; a view not taken (the
   * process mid-exec) is tried again on the next tick, and only views taken count against the budget.
   */
  const withRootView = async (id: ProcessIdentity): Promise<void> => {
    if (!opts.rootPaths || opts.rootPaths.length === 0 || rootViews >= MAX_ROOT_VIEWS || rootViewOf(id)) return;
    const view = await readRootView(id.pid, opts.rootPaths);
    if (!view) return;
    rootViews++;
    attachRootView(id, view);
  };
  /** Reads the posture of a new identity entry of the box's program (first sighting or a change), within the budget. */
  const withPosture = async (id: ProcessIdentity): Promise<ProcessIdentity> => {
    // At most two per tick: a fork bomb's first processes must not stall the sampling of its concurrency.
    if (postureReads >= maxPostureReads || postureReadsThisTick >= 2) return id;
    postureReads++;
    postureReadsThisTick++;
    hostView ??= await readHostView();
    const posture = await readProcessPosture(id.pid, hostView);
    if (posture) attachPosture(id, posture);
    return id;
  };
  /** Marks the box's own processes among `pids`: by executable first, then (repeatedly) by parent. */
  const markOwn = async (pids: readonly number[]): Promise<void> => {
    const parents = new Map<number, number | undefined>();
    for (const pid of pids) {
      if (own.has(pid)) continue;
      const exe = procLink(`/proc/${pid}/exe`) ?? '';
      if (program.test(exeBasename(exe))) {
        own.add(pid);
        if (PAYLOAD_INTERPRETER.test(exeBasename(exe))) interpreter.add(pid);
      } else parents.set(pid, parentPid(pid));
    }
    for (let changed = true; changed;) {
      changed = false;
      for (const [pid, parent] of parents) {
        if (parent !== undefined && own.has(parent)) {
          own.add(pid);
          parents.delete(pid);
          changed = true;
        }
      }
    }
  };
  const tick = async (): Promise<void> => {
    if (busy || !env.hostPids) return;
    busy = true;
    postureReadsThisTick = 0;
    try {
      const named = await env.hostPids();
      maxConcurrent = Math.max(maxConcurrent, named.length);
      // What the adapter names speaks for the box only where the host ties it to this execution.
      const pids = opts.tracker ? opts.tracker.noteNamed(named) : named;
      await markOwn(pids);
      for (const pid of pids) {
        if (!own.has(pid)) continue;
        const history = seen.get(pid);
        if (!history && seen.size >= maxProcesses) continue;
        const id = await readProcessIdentity(pid);
        if (!id) continue;
        if (!history) {
          // Posture first: its reads are synchronous; the root view's lookups queue on the thread pool, and a busy
          // machine must not spend the process's life on them before its namespaces are read.
          const first = await withPosture(id);
          await withRootView(id);
          seen.set(pid, [first]);
          kept++;
          continue;
        }
        const [first] = history;
        if (first) await withRootView(first);
        const last = history[history.length - 1];
        if (last && sameIdentity(last, id)) {
          // In place: the entry keeps its posture (attached to this very object).
          last.peakRssBytes = Math.max(last.peakRssBytes ?? 0, id.peakRssBytes ?? 0);
          // A posture read that failed (the process mid-exec, a busy machine) is tried again while the budget lasts.
          if (postureOf(last) === undefined) await withPosture(last);
        } else if (kept < maxProcesses * 2) {
          history.push(await withPosture(id));
          kept++;
        }
      }
      await readCgroup(pids);
      // Only while no process of the box's program was seen: then the host sees the program itself.
      if (carriers && seen.size === 0) await carriers.tick(named, own);
      const nonce = opts.release;
      if (nonce !== undefined) for (const pid of pids) if (releasable(pid, nonce)) release(pid);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), opts.intervalMs ?? 100);
  void tick();
  return {
    async stop() {
      clearInterval(timer);
      while (busy) await new Promise((r) => setTimeout(r, 10));
      const processes = [...seen.values()].flat();
      const userSpaceKernel = processes.length === 0 ? carriers?.result : undefined;
      // Once more after the program ended (an OOM kill is counted as it dies), while the backend has not yet removed them.
      if (cg) cg.counters = joinCounters(cg.counters, await readBoxCounters(cg.at));
      const cgroup = cg ? { pid: cg.pid, where: describeBoxCgroup(cg.at), counters: sinceFirstRead(cg.counters, cg.first) } : undefined;
      const unnamed = opts.tracker?.unnamed() ?? [];
      const unlinkedNamed = opts.tracker?.unlinkedNamed() ?? [];
      return {
        processes,
        maxConcurrent,
        ...(userSpaceKernel ? { userSpaceKernel } : {}),
        ...(cgroup ? { cgroup } : {}),
        ...(unnamed.length > 0 ? { unnamed } : {}),
        ...(unlinkedNamed.length > 0 ? { unlinkedNamed } : {}),
      };
    },
  };
}

/** Heartbeat file size right after destroy and 1.2 s later; undefined when nothing was ever written. */
export async function watchHeartbeat(path: string): Promise<Observation['heartbeat']> {
  const size = async (): Promise<number> => (await stat(path).catch(() => undefined))?.size ?? -1;
  const afterDestroyBytes = await size();
  if (afterDestroyBytes < 0) return undefined;
  await new Promise((r) => setTimeout(r, 1200));
  return { afterDestroyBytes, laterBytes: await size() };
}
