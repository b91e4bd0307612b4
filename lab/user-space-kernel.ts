import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { exeBasename, parentPid, procLink, procText } from '../core/proc-files.js';

/**
 * A kernel that runs in user space (gVisor's Sentry) keeps the box's memory in a file of its own and maps it
 * into the host processes where the box's code runs (runsc's address-space stubs). The host cannot see the
 * box's program as a process of its own, but it can read those processes' memory through /proc/<pid>/mem:
 * finding this execution's nonce there (the payload's argv is on its stack) ties them to the payload.
 */
export interface UserSpaceKernelKind {
  name: string;
  /** Basename of /proc/<pid>/exe of the kernel's processes. */
  exe: RegExp;
  /** The name its memory file carries in /proc/<pid>/maps and /proc/<pid>/fd. */
  memoryFile: string;
  /** argv[0] of the kernel's process (the one that maps the whole memory file and serves the system calls). */
  kernel: string;
  /** argv[0] of its file server (the process that opens the box's files on the host for it), the kernel's sibling. */
  fileServer: string;
}

export const USER_SPACE_KERNELS: readonly UserSpaceKernelKind[] = [
  { name: 'gVisor (runsc)', exe: /^runsc$/, memoryFile: '/memfd:runsc-memory', kernel: 'runsc-sandbox', fileServer: 'runsc-gofer' },
];

/** Most bytes of one mapping looked at, and read from all mappings of one process in one look. */
const MAX_MAPPING_BYTES = 16 << 20;
export const MAX_LOOK_BYTES = 32 << 20;
const CHUNK = 1 << 20;

/** The user-space kernel whose executable this process runs, if any. */
export function kernelKindOf(pid: number): UserSpaceKernelKind | undefined {
  const exe = exeBasename(procLink(`/proc/${pid}/exe`) ?? '');
  return USER_SPACE_KERNELS.find((k) => k.exe.test(exe));
}

/** Address ranges of /proc/<pid>/maps backed by the kernel's memory file, highest first (the stack, with argv, is high). */
export function memoryMappings(maps: string, memoryFile: string): { start: number; end: number; line: string }[] {
  const out: { start: number; end: number; line: string }[] = [];
  for (const line of maps.split('\n')) {
    const path = line.split(/\s+/).slice(5).join(' ');
    if (path !== memoryFile && path !== `${memoryFile} (deleted)`) continue;
    const m = /^([0-9a-f]+)-([0-9a-f]+)\s+r/.exec(line);
    if (!m?.[1] || !m[2]) continue;
    const start = Number.parseInt(m[1], 16);
    const end = Number.parseInt(m[2], 16);
    if (Number.isSafeInteger(end) && end > start) out.push({ start, end, line: line.split(/\s+/)[0] ?? '' });
  }
  return out.sort((a, b) => b.start - a.start);
}

export interface MemoryLook {
  /** The mapping (start-end) where the needle was found. */
  foundIn?: string;
  mappings: number;
  bytesRead: number;
}

export interface MemoryScan {
  /** For each needle found, the mapping (start-end) where it was first found. */
  found: Map<string, string>;
  /** Every present page of every mapping was read to its end (no budget, stop or failed read cut it short): a needle not found was in no present page. */
  complete: boolean;
  mappings: number;
  bytesRead: number;
}

let pageSize: number | undefined;
/** The kernel's page size, from this process's own smaps (4 KiB where it cannot be read). */
function kernelPageSize(): number {
  pageSize ??= Number(/^KernelPageSize:\s+(\d+) kB$/m.exec(procText('/proc/self/smaps') ?? '')?.[1] ?? 4) * 1024;
  return pageSize;
}

/**
 * Runs of pages of [start, end) present in the process's page tables (/proc/<pid>/pagemap bit 63). Reading only
 * those faults nothing in: a read of an absent page of a shared memory file would allocate it, charged to the box.
 * `whole`: the page table of the range was read whole.
 */
function presentRuns(fd: number, start: number, end: number): { runs: { start: number; end: number }[]; whole: boolean } {
  const page = kernelPageSize();
  const first = Math.floor(start / page);
  const count = Math.ceil((end - start) / page);
  const table = Buffer.alloc(count * 8);
  let n = 0;
  try {
    n = readSync(fd, table, 0, table.length, first * 8);
  } catch {
    return { runs: [], whole: false };
  }
  const runs: { start: number; end: number }[] = [];
  for (let i = 0; i < Math.floor(n / 8); i++) {
    if (table.readBigUInt64LE(i * 8) >> 63n !== 1n) continue;
    const at = (first + i) * page;
    const last = runs[runs.length - 1];
    if (last && last.end === at) last.end = at + page;
    else runs.push({ start: at, end: at + page });
  }
  return { runs, whole: n === table.length };
}

/**
 * Looks for `needle` in the pages of the process's mappings of the kernel's memory file that are present, within a
 * byte budget: through /proc/<pid>/mem, in 1 MiB chunks that overlap by the needle's length within a run of
 * contiguous pages. An unreadable chunk is skipped; a process that is gone ends the look.
 */
export function findInKernelMemory(pid: number, kind: UserSpaceKernelKind, needle: string, budget = MAX_LOOK_BYTES): MemoryLook {
  const scan = scanKernelMemory(pid, kind, [needle], budget);
  const foundIn = scan.found.get(needle);
  return { ...(foundIn !== undefined ? { foundIn } : {}), mappings: scan.mappings, bytesRead: scan.bytesRead };
}

/**
 * Reads the present pages of the process's mappings of the kernel's memory file for every needle, until one of
 * `stopOn` is found, and says whether it read all of them: not stopped, no chunk unreadable, no mapping cut at its
 * size cap, the budget not used up.
 */
export function scanKernelMemory(
  pid: number,
  kind: UserSpaceKernelKind,
  needles: readonly string[],
  budget = MAX_LOOK_BYTES,
  stopOn: readonly string[] = needles,
): MemoryScan {
  const maps = procText(`/proc/${pid}/maps`);
  const mappings = maps === undefined ? [] : memoryMappings(maps, kind.memoryFile);
  const scan: MemoryScan = { found: new Map(), complete: false, mappings: mappings.length, bytesRead: 0 };
  const wants = needles.filter((n) => n.length > 0).map((n) => ({ needle: n, bytes: Buffer.from(n) }));
  if (maps === undefined || wants.length === 0) return scan;
  if (mappings.length === 0) return { ...scan, complete: true };
  const overlap = Math.max(...wants.map((w) => w.bytes.length));
  let mem: number;
  let pagemap: number;
  try {
    mem = openSync(`/proc/${pid}/mem`, 'r');
  } catch {
    return scan;
  }
  try {
    pagemap = openSync(`/proc/${pid}/pagemap`, 'r');
  } catch {
    closeSync(mem);
    return scan;
  }
  const buf = Buffer.alloc(CHUNK + overlap);
  let whole = true;
  try {
    for (const m of mappings) {
      if (m.end - m.start > MAX_MAPPING_BYTES) whole = false;
      const present = presentRuns(pagemap, m.start, Math.min(m.end, m.start + MAX_MAPPING_BYTES));
      if (!present.whole) whole = false;
      for (const run of present.runs) {
        for (let at = run.start; at < run.end;) {
          const len = Math.min(CHUNK + overlap, run.end - at, budget - scan.bytesRead);
          if (len <= 0) return scan;
          let n: number;
          try {
            n = readSync(mem, buf, 0, len, at);
          } catch {
            whole = false;
            at += CHUNK;
            continue;
          }
          if (n === 0) return scan;
          scan.bytesRead += n;
          const chunk = buf.subarray(0, n);
          for (const w of wants) if (!scan.found.has(w.needle) && chunk.includes(w.bytes)) scan.found.set(w.needle, m.line);
          if (stopOn.some((needle) => scan.found.has(needle))) return scan;
          // The next chunk starts at the first place a needle could begin that this one did not hold whole.
          at += n >= overlap ? n - overlap + 1 : n;
        }
      }
    }
  } finally {
    closeSync(mem);
    closeSync(pagemap);
  }
  return { ...scan, complete: whole };
}

/** How many mappings of the kernel's memory file the process has (0: none, or gone). */
export function mappingCount(pid: number, kind: UserSpaceKernelKind): number {
  const maps = procText(`/proc/${pid}/maps`);
  return maps === undefined ? 0 : memoryMappings(maps, kind.memoryFile).length;
}

/** The process itself or its nearest ancestor (at most 4 up) whose argv[0] is `name`. */
export function selfOrAncestor(pid: number, name: string): number | undefined {
  for (let p: number | undefined = pid, i = 0; p !== undefined && p > 1 && i < 5; p = parentPid(p), i++) if (argv0(p) === name) return p;
  return undefined;
}

/** Children of a process, from every thread's children list (a Go runtime forks from any thread). */
export function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`).slice(0, 512);
  } catch {
    return [];
  }
  const out = new Set<number>();
  for (const t of tasks) for (const c of (procText(`/proc/${pid}/task/${t}/children`) ?? '').split(/\s+/)) if (/^\d+$/.test(c)) out.add(Number(c));
  return [...out];
}

/** argv[0] from /proc/<pid>/cmdline. */
export function argv0(pid: number): string {
  return (procText(`/proc/${pid}/cmdline`) ?? '').split('\0')[0] ?? '';
}
