import { exeBasename, procBytes, procLink, procPids, procText } from '../core/proc-files.js';
import { PAYLOAD_INTERPRETER } from '../model/payload.js';

const POLL_MS = 150;
/** Most processes kept (a fork bomb must not grow the record without bound). */
const MAX_TRACKED = 512;

/** One host process, for good: a pid seen again with another start time is another process. */
export interface TrackedProcess {
  pid: number;
  /** Clock ticks after boot (field 22 of /proc/<pid>/stat). */
  start: number;
  /** Basename of /proc/<pid>/exe when first seen. */
  exe: string;
  command: string;
  /** Why it is this execution's: it carried the nonce (or a needle) itself, or descends from one that did. */
  via: 'argv' | 'environ' | 'descendant';
  /** Ancestors (pid:start) when first seen, nearest first. */
  ancestors: string[];
}

interface Stat {
  ppid: number;
  start: number;
  state: string;
  /** The kernel's command name (changes on exec). */
  comm: string;
}

function statOf(pid: number): Stat | undefined {
  const text = procText(`/proc/${pid}/stat`);
  if (text === undefined) return undefined;
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' ');
  const [state, ppid, start] = [f[0], Number(f[1]), Number(f[19])];
  if (state === undefined || !Number.isInteger(ppid) || !Number.isFinite(start)) return undefined;
  return { ppid, start, state, comm: text.slice(text.indexOf('(') + 1, close) };
}

/** How long a process found not to be this execution's is left alone before it is looked at again (it may exec). */
const RECHECK_MS = 1000;

const key = (pid: number, start: number): string => `${pid}:${start}`;

/** The namespaces a box's program is placed in (never net: a run's boxes share the lab's). */
const SCOPE_NAMESPACES = ['pid', 'mnt', 'ipc', 'uts'] as const;

/** A process's namespaces and cgroups, each as one string ("mnt:[4026532201]", "cgroup 4:memory:/box"). */
export function scopesOf(pid: number): string[] {
  const ns = SCOPE_NAMESPACES.flatMap((n) => procLink(`/proc/${pid}/ns/${n}`) ?? []);
  const cgroups = (procText(`/proc/${pid}/cgroup`) ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.endsWith(':/'))
    .map((l) => `cgroup ${l}`);
  return [...ns, ...cgroups];
}

let harnessScopes: Set<string> | undefined;

/** The same process is alive (a stopped one, state T, counts; a zombie does not). */
export function aliveSame(p: { pid: number; start: number }): boolean {
  const s = statOf(p.pid);
  return s !== undefined && s.start === p.start && s.state !== 'Z' && s.state !== 'X';
}

/** The state letter of a living process ("T" stopped, "S" sleeping…), or undefined. */
export function stateOf(pid: number): string | undefined {
  return statOf(pid)?.state;
}

/**
 * The host's own record of one execution's processes: every process of the payload's interpreter whose command line or
 * environment carries the execution's nonce (or another needle, as a survivor's mark), and every descendant of one
 * (whatever it runs), each by pid + start
 * time. What the adapter names (`hostPids`) is checked against it: an interpreter process of this execution the
 * adapter never named is the box's program running where the adapter did not say, and a named process with no tie to
 * the nonce cannot speak for the box. Reads only /proc.
 */
export class ExecTracker {
  private readonly tracked = new Map<string, TrackedProcess>();
  private readonly named = new Set<string>();
  /** What each named process was when first named (its via is unused). */
  private readonly namedSeen = new Map<string, TrackedProcess>();
  /** Interpreter processes of this execution found unnamed after a hostPids answer, with how many answers missed them. */
  private readonly misses = new Map<string, number>();
  private readonly unnamedKeys = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly needles: Buffer[];
  private readonly own = new Set<number>();
  /** Namespaces and cgroups of this execution's program that the harness is not in (candidates until checked). */
  private readonly scopes = new Set<string>();
  /** Scopes that held a process of something else: never used to find survivors. */
  private readonly sharedScopes = new Set<string>();

  constructor(
    readonly nonce: string,
    extraNeedles: readonly string[] = [],
  ) {
    this.needles = [nonce, ...extraNeedles].map((n) => Buffer.from(n));
    // The harness and its ancestors are never the box's.
    for (let pid: number | undefined = process.pid; pid !== undefined && pid > 1 && !this.own.has(pid); pid = statOf(pid)?.ppid) this.own.add(pid);
  }

  /**
   * Polls /proc; with `names` (the adapter's hostPids) also records what the adapter names on every tick, for a
   * probe that samples nothing else (the wall-clock ones): a named interpreter process is then looked for too.
   */
  start(intervalMs = POLL_MS, names?: () => Promise<number[]>): this {
    this.names = names;
    let busy = false;
    const tick = (): void => {
      const names = this.names;
      // A scan the sampler's own check just made (noteNamed) is not made again.
      if (!names) {
        if (Date.now() - this.lastScan >= intervalMs / 2) this.scan();
        return;
      }
      if (busy) return;
      busy = true;
      void names()
        .then((pids) => this.noteNamed(pids))
        .catch(() => this.scan())
        .finally(() => (busy = false));
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
    return this;
  }

  /** No more hostPids calls (the exec is over: the adapter is not asked while it destroys the box); /proc scans go on. */
  stopAsking(): void {
    this.names = undefined;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** How a process carries a needle: in its command line, in its environment, or not. */
  private carries(pid: number): 'argv' | 'environ' | undefined {
    const cmdline = procBytes(`/proc/${pid}/cmdline`);
    if (cmdline && this.needles.some((n) => cmdline.includes(n))) return 'argv';
    const environ = procBytes(`/proc/${pid}/environ`);
    if (environ && this.needles.some((n) => environ.includes(n))) return 'environ';
    return undefined;
  }

  /** Ancestors (pid:start), nearest first; from the nearest tracked one on, its own recorded chain. */
  private chain(s: Stat): string[] {
    const out: string[] = [];
    let at = s.ppid;
    while (at > 1 && out.length < 64 && !this.own.has(at)) {
      const tracked = this.trackedPids.get(at);
      const t = tracked === undefined ? undefined : this.tracked.get(key(at, tracked));
      if (t) return [...out, key(at, t.start), ...t.ancestors].slice(0, 64);
      const p = statOf(at);
      if (!p) break;
      out.push(key(at, p.start));
      at = p.ppid;
    }
    return out;
  }

  private lastScan = 0;
  private names: (() => Promise<number[]>) | undefined;
  /** Ancestors (pid:start) of the processes that carried a needle themselves: named ones count as the box's. */
  private readonly carrierAncestors = new Set<string>();
  /** What was last looked at of each process found not to be this execution's: its start, command name, and when. */
  private readonly examined = new Map<number, { start: number; comm: string; at: number }>();
  /** The start of each tracked pid: a later pass skips it without reading anything. */
  private readonly trackedPids = new Map<number, number>();

  /**
   * One pass over /proc: new carriers and new descendants of tracked processes. Incremental, because it runs on every
   * sampler tick and a fork bomb must not slow the ticks: a tracked pid costs nothing, a process older than this
   * execution already found not to be its is looked at again only every RECHECK_MS, and a younger one costs one stat
   * read (its argv and environment are read again only when its command name changed: it exec'd).
   */
  scan(): void {
    const now = Date.now();
    this.lastScan = now;
    if (this.tracked.size >= MAX_TRACKED) return;
    const fresh: { pid: number; s: Stat }[] = [];
    for (const pid of procPids()) {
      if (this.own.has(pid) || this.trackedPids.has(pid)) continue;
      const seen = this.examined.get(pid);
      if (seen && seen.start < this.since && now - seen.at < RECHECK_MS) continue;
      const s = statOf(pid);
      if (!s || s.state === 'Z' || s.state === 'X') continue;
      if (seen && seen.start === s.start && seen.comm === s.comm && now - seen.at < RECHECK_MS) continue;
      fresh.push({ pid, s });
    }
    // Parents before children: a child found in this pass is tied to a parent found in it too.
    fresh.sort((a, b) => a.s.start - b.s.start);
    for (const { pid, s } of fresh) if (this.tracked.size < MAX_TRACKED) this.examine(pid, s, now);
  }

  /** Whether one process is this execution's (it carries a needle or descends from a tracked one); tracks it if so. */
  private examine(pid: number, s: Stat, now: number): boolean {
    const k = key(pid, s.start);
    if (this.tracked.has(k)) return true;
    const exe = exeBasename(procLink(`/proc/${pid}/exe`) ?? '');
    const ancestors = this.chain(s);
    // Only the payload's interpreter is asked for its argv and environment: reading them takes the process's memory
    // lock, and a user-space kernel's stub processes (gVisor) fork and map under it while a fork bomb runs.
    const carried = PAYLOAD_INTERPRETER.test(exe) ? this.carries(pid) : undefined;
    const via = carried ?? (ancestors.some((a) => this.tracked.has(a)) ? 'descendant' : undefined);
    if (!via) {
      this.examined.set(pid, { start: s.start, comm: s.comm, at: now });
      return false;
    }
    this.examined.delete(pid);
    const command = (procBytes(`/proc/${pid}/cmdline`)?.toString('utf8') ?? '').replaceAll('\0', ' ').trim().slice(0, 120);
    this.tracked.set(k, { pid, start: s.start, exe, command, via, ancestors });
    this.trackedPids.set(pid, s.start);
    if (via !== 'descendant') for (const a of ancestors) this.carrierAncestors.add(a);
    if (via !== 'descendant' && PAYLOAD_INTERPRETER.test(exe)) {
      harnessScopes ??= new Set(scopesOf(process.pid));
      for (const scope of scopesOf(pid)) if (!harnessScopes.has(scope)) this.scopes.add(scope);
    }
    return true;
  }

  /**
   * Marks as shared every scope of the program that holds a process older than this execution and neither tracked
   * nor named (the lab, a tool's own cgroup, a box that was there before): only the execution's own scopes may name
   * survivors. Call while the box exists.
   */
  checkScopes(): void {
    if (this.scopes.size === 0) return;
    for (const pid of procPids()) {
      const s = statOf(pid);
      // Only what was there before this execution began betrays a scope shared with something else.
      if (!s || this.own.has(pid) || s.state === 'Z' || s.start >= this.since) continue;
      const k = key(pid, s.start);
      if (this.tracked.has(k) || this.named.has(k)) continue;
      for (const scope of scopesOf(pid)) if (this.scopes.has(scope)) this.sharedScopes.add(scope);
    }
  }

  /**
   * Processes alive now (a stopped one counts) in a namespace or cgroup of this execution's program that held nothing
   * else, started since the tracker was made: found by where they are, whatever their argv or environment.
   */
  inScopes(keep: (exe: string) => boolean = () => true): TrackedProcess[] {
    const mine = [...this.scopes].filter((x) => !this.sharedScopes.has(x));
    if (mine.length === 0) return [];
    const found: { t: Omit<TrackedProcess, 'command'>; command: string; scopes: string[] }[] = [];
    for (const pid of procPids()) {
      const s = statOf(pid);
      if (!s || this.own.has(pid) || s.state === 'Z' || s.state === 'X' || s.start < this.since) continue;
      const scopes = scopesOf(pid).filter((x) => mine.includes(x));
      if (scopes.length === 0) continue;
      const cmdline = procText(`/proc/${pid}/cmdline`) ?? '';
      // Another execution's payload in a scope (boxes of one backend may share a cgroup path): that scope is not this
      // box's alone, and names no survivor of it.
      const other = /"nonce":"([0-9a-f]+)"/.exec(cmdline);
      if (other && other[1] !== this.nonce) {
        for (const x of scopes) this.sharedScopes.add(x);
        continue;
      }
      const exe = exeBasename(procLink(`/proc/${pid}/exe`) ?? '');
      if (!keep(exe)) continue;
      found.push({ t: { pid, start: s.start, exe, via: 'descendant', ancestors: [] }, command: cmdline.replaceAll('\0', ' ').trim().slice(0, 120), scopes });
    }
    return found.flatMap(({ t, command, scopes }) => {
      const where = scopes.find((x) => !this.sharedScopes.has(x));
      if (where === undefined) return [];
      return [{ ...t, command: `${command || t.exe}; in the box's ${where.split(' ')[0] === 'cgroup' ? where : `namespace ${where}`}` }];
    });
  }

  /** The start tick of the newest process when the tracker was made: what starts later starts at or after it. */
  private readonly since = Math.max(0, ...procPids().map((p) => statOf(p)?.start ?? 0));

  /** Whether a pid (as it is now) is this execution's: tracked, or an ancestor of a tracked carrier. */
  linked(pid: number): boolean {
    const s = statOf(pid);
    if (!s) return false;
    const k = key(pid, s.start);
    return this.tracked.has(k) || this.carrierAncestors.has(k);
  }

  /**
   * Records one hostPids answer: the pids it named (as pid + start), the named ones with no tie to this execution,
   * and this execution's interpreter processes it left out (twice in a row: a process born between the answer and
   * the scan is not held against it).
   */
  noteNamed(pids: readonly number[]): number[] {
    // One incremental pass at most every half tick: a fork bomb's answers come fast and long.
    if (Date.now() - this.lastScan >= POLL_MS / 3) this.scan();
    const now = Date.now();
    const linked: number[] = [];
    for (const pid of pids) {
      const s = statOf(pid);
      if (!s) continue;
      const k = key(pid, s.start);
      this.named.add(k);
      if (!this.namedSeen.has(k) && this.namedSeen.size < MAX_TRACKED) {
        const command = (procBytes(`/proc/${pid}/cmdline`)?.toString('utf8') ?? '').replaceAll('\0', ' ').trim().slice(0, 120);
        this.namedSeen.set(k, { pid, start: s.start, exe: exeBasename(procLink(`/proc/${pid}/exe`) ?? ''), command, via: 'descendant', ancestors: [] });
      }
      if (this.tracked.has(k) || this.carrierAncestors.has(k)) linked.push(pid);
      // A named process the last pass had not looked at (or not since it exec'd) is looked at now, alone.
      else if (!this.own.has(pid) && this.tracked.size < MAX_TRACKED && this.unexamined(pid, s, now) && this.examine(pid, s, now)) linked.push(pid);
    }
    for (const [k, t] of this.tracked) {
      if (!PAYLOAD_INTERPRETER.test(t.exe)) continue;
      if (this.isNamed(t)) {
        this.misses.delete(k);
        continue;
      }
      if (!aliveSame(t)) continue;
      const missed = (this.misses.get(k) ?? 0) + 1;
      this.misses.set(k, missed);
      if (missed >= 2) this.unnamedKeys.add(k);
    }
    return linked;
  }

  private unexamined(pid: number, s: Stat, now: number): boolean {
    const seen = this.examined.get(pid);
    return !seen || seen.start !== s.start || seen.comm !== s.comm || now - seen.at >= RECHECK_MS;
  }

  private isNamed(t: TrackedProcess): boolean {
    return this.named.has(key(t.pid, t.start)) || t.ancestors.some((a) => this.named.has(a));
  }

  /** Whether any hostPids answer was recorded. */
  get askedAdapter(): boolean {
    return this.named.size > 0 || this.misses.size > 0 || this.unnamedKeys.size > 0;
  }

  /** This execution's interpreter processes the adapter never named (nor any ancestor of them). */
  unnamed(): string[] {
    return [...this.unnamedKeys].flatMap((k) => {
      const t = this.tracked.get(k);
      return t && !this.isNamed(t)
        ? [`pid ${t.pid} (${t.command || t.exe}; this execution's nonce in its ${t.via === 'descendant' ? "parent's" : t.via})`]
        : [];
    });
  }

  /** Named pids with no tie to this execution's nonce (as the host knows it by now): never the source of evidence. */
  unlinkedNamed(): string[] {
    return [...this.namedSeen]
      .filter(([k]) => !this.tracked.has(k) && !this.carrierAncestors.has(k))
      .slice(0, 16)
      .map(([, t]) => `pid ${t.pid} (${t.command.slice(0, 80) || '?'})`);
  }

  /** Every tracked process, or those `keep` says yes to. */
  processes(keep: (t: TrackedProcess) => boolean = () => true): TrackedProcess[] {
    return [...this.tracked.values()].filter(keep);
  }

  /** Tracked processes still alive now (same pid and start; a stopped one counts). */
  alive(keep: (t: TrackedProcess) => boolean = () => true): TrackedProcess[] {
    return this.processes(keep).filter(aliveSame);
  }

  /** Processes the adapter named while the box ran that are still alive now (same pid and start). */
  namedAlive(keep: (t: TrackedProcess) => boolean = () => true): TrackedProcess[] {
    return [...this.namedSeen.values()].filter((t) => keep(t) && aliveSame(t));
  }
}

export const isInterpreter = (t: TrackedProcess): boolean => PAYLOAD_INTERPRETER.test(t.exe);

/** A tracked process as evidence names it. */
export function describeTracked(t: TrackedProcess): string {
  const state = stateOf(t.pid);
  return `pid ${t.pid} (started at tick ${t.start}${state === 'T' || state === 't' ? ', stopped' : ''}; ${t.command || t.exe || 'argv blank'})`;
}
