import { createHash } from 'node:crypto';
import { attachPosture, readHostView, readProcessIdentity, readProcessPosture, type HostView, type ProcessIdentity } from './host-process.js';
import { parentPid, procText, startTicks } from '../core/proc-files.js';
import {
  argv0,
  childrenOf,
  findInKernelMemory,
  kernelKindOf,
  mappingCount,
  MAX_LOOK_BYTES,
  scanKernelMemory,
  selfOrAncestor,
  type UserSpaceKernelKind,
} from './user-space-kernel.js';
import type { UserSpaceKernel } from '../model/observation.js';
import type { CarrierAfterDestroy } from '../model/probe.js';

/** Looks per process before it is given up, and bytes of memory read per execution (a look reads at most MAX_LOOK_BYTES). */
const MAX_LOOKS = 10;
const MAX_BYTES = 160 << 20;
/** Most processes of each role whose identity and posture are read. */
const MAX_PER_ROLE = 6;

/**
 * The mark a payload puts in the environment or arguments of a program it runs (identity-setuid's planted binary,
 * survive-teardown's daemon), so that the host can tell that program's address space from the payload's: derived
 * from the nonce, never containing it.
 */
export function programMark(nonce: string): string {
  return `sandcheck-mark-${createHash('sha256').update(`program-mark:${nonce}`).digest('hex').slice(0, 32)}`;
}

/**
 * The name a payload's survivor carries in its command line: the program mark where its own address space is looked
 * for. The payload joins it itself: passed whole, it would be in a launcher's command line too (runsc do, podman run).
 */
export function survivorName(nonce: string, marked: boolean): string {
  return `sandcheck-survivor-${marked ? programMark(nonce) : nonce}`;
}

/** How long a marked process may take to end after destroy before it counts as still running (waited only while one runs). */
export const GONE_WITHIN_MS = 10_000;

/**
 * After destroy: whether the user-space kernel that ran this execution, and the marked address space if one was found,
 * still run (the same pid with the same start, read while the box ran). Undefined where the kernel's start was not
 * read: then nothing can be said.
 */
export async function carriersAfterDestroy(usk: UserSpaceKernel, goneWithinMs = GONE_WITHIN_MS): Promise<CarrierAfterDestroy[] | undefined> {
  const { marked } = usk;
  const kernel =
    marked?.kernel && marked.started?.kernel !== undefined
      ? { pid: marked.kernel.pid, start: marked.started.kernel }
      : usk.kernels[0] && usk.kernelStarted !== undefined
        ? { pid: usk.kernels[0].pid, start: usk.kernelStarted }
        : undefined;
  if (!kernel) return undefined;
  const watched = [
    ...(marked?.started ? [{ pid: marked.addressSpace.pid, role: 'address space' as const, start: marked.started.addressSpace }] : []),
    { ...kernel, role: 'kernel' as const },
  ];
  const running = (w: (typeof watched)[number]): boolean => startTicks(w.pid) === w.start;
  // A runtime may return from destroy while its processes are still exiting: a survivor is one that outlasts this.
  for (const until = Date.now() + goneWithinMs; watched.some(running) && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
  return watched.map((w) => ({ pid: w.pid, role: w.role, running: running(w) }));
}

/**
 * Finds, among the box's host processes, a user-space kernel's address space that holds this execution's nonce
 * (runsc's stubs map the kernel's memory file: the box's code runs in them), and reads the identity and posture of
 * the address spaces of that kernel, of the kernel (the nearest ancestor that is the kernel's process) and of its
 * file servers (the kernel's siblings of that name, in its cgroup), all at that moment: while the payload holds
 * still, after the kernel set itself up (read earlier, the Sentry shows no seccomp filter yet). Where the box's code
 * runs inside the kernel's own process (no stubs), the kernel is searched itself and stands for both.
 */
export class KernelCarrierTracker {
  private readonly looks = new Map<number, number>();
  private bytes = 0;
  private found: UserSpaceKernel | undefined;
  private hostView: HostView | undefined;
  private kernelPid: number | undefined;
  private kind: UserSpaceKernelKind | undefined;
  private readonly markLooks = new Map<number, number>();

  /** With `mark`, after the tie it goes on looking for an address space that holds the mark and not the nonce. */
  constructor(
    private readonly nonce: string,
    private readonly mark?: string,
  ) {}

  get result(): UserSpaceKernel | undefined {
    return this.found;
  }

  /** One look at the box's pids that are not its own program; once tied, looks only for the marked program (if any), within the same budget. */
  async tick(pids: readonly number[], own: ReadonlySet<number>): Promise<void> {
    if (this.found) return this.lookForMark(pids, own);
    if (this.bytes >= MAX_BYTES) return;
    const candidates: { pid: number; kind: UserSpaceKernelKind; kernel: boolean }[] = [];
    for (const pid of pids) {
      const kind = own.has(pid) ? undefined : kernelKindOf(pid);
      if (kind) candidates.push({ pid, kind, kernel: argv0(pid) === kind.kernel });
    }
    // Address spaces only: the payload's stack and heap (with its argv) are small mappings in them, while the
    // kernel maps its whole memory file (gigabytes). The kernel is searched only where the box has no other process
    // of that kernel at all (a platform that runs the box's code inside the kernel's process); runsc's ptrace
    // platform always has its first stub, so a tick before the payload's stub has mappings just waits.
    const others = candidates.filter((c) => !c.kernel);
    const spaces = others.length > 0 ? others.filter((c) => mappingCount(c.pid, c.kind) > 0) : candidates;
    for (const c of spaces) {
      if ((this.looks.get(c.pid) ?? 0) >= MAX_LOOKS || this.bytes >= MAX_BYTES) continue;
      this.looks.set(c.pid, (this.looks.get(c.pid) ?? 0) + 1);
      const look = findInKernelMemory(c.pid, c.kind, this.nonce, Math.min(MAX_LOOK_BYTES, MAX_BYTES - this.bytes));
      this.bytes += look.bytesRead;
      if (look.foundIn !== undefined) {
        await this.tie(
          c.pid,
          c.kind,
          look.foundIn,
          candidates.map((x) => x.pid),
        );
        return;
      }
    }
  }

  /**
   * The marked program's address space: one of the tied kernel's, holding the mark, and read whole without the
   * nonce (the payload's own address space, and a fork of it before its exec, hold both).
   */
  private async lookForMark(pids: readonly number[], own: ReadonlySet<number>): Promise<void> {
    const found = this.found;
    const kind = this.kind;
    const kernel = this.kernelPid;
    if (this.mark === undefined || found === undefined || found.marked || kind === undefined || kernel === undefined) return;
    const tied = found.addressSpaces[0]?.pid;
    for (const pid of pids) {
      if (own.has(pid) || pid === kernel || pid === tied || this.bytes >= MAX_BYTES || (this.markLooks.get(pid) ?? 0) >= MAX_LOOKS) continue;
      if (kernelKindOf(pid) !== kind || selfOrAncestor(parentPid(pid) ?? 0, kind.kernel) !== kernel || mappingCount(pid, kind) === 0) continue;
      this.markLooks.set(pid, (this.markLooks.get(pid) ?? 0) + 1);
      // Starts taken before the scan and checked after the reads: a pid reused meanwhile ties nothing.
      const spaceStart = startTicks(pid);
      const kernelStart = startTicks(kernel);
      // A scan that meets the nonce stops there (a fork of the payload before its exec holds both).
      const scan = scanKernelMemory(pid, kind, [this.mark, this.nonce], Math.min(MAX_LOOK_BYTES, MAX_BYTES - this.bytes), [this.nonce]);
      this.bytes += scan.bytesRead;
      const at = scan.found.get(this.mark);
      if (at === undefined || scan.found.has(this.nonce) || !scan.complete) continue;
      const addressSpace = await this.read(pid);
      if (!addressSpace || spaceStart === undefined || startTicks(pid) !== spaceStart) continue;
      const [read] = await this.readAll([kernel]);
      const kernelRead = read && kernelStart !== undefined && startTicks(kernel) === kernelStart ? read : undefined;
      found.marked = {
        tie: `this execution's program mark in host pid ${pid}'s memory at ${at}, mapped from ${kind.memoryFile}, and not its nonce (${scan.bytesRead} bytes read, every present page)`,
        addressSpace,
        ...(kernelRead ? { kernel: kernelRead } : {}),
        started: { addressSpace: spaceStart, ...(kernelRead && kernelStart !== undefined ? { kernel: kernelStart } : {}) },
      };
      return;
    }
  }

  private async read(pid: number): Promise<ProcessIdentity | undefined> {
    const id = await readProcessIdentity(pid);
    if (!id) return undefined;
    this.hostView ??= await readHostView();
    const posture = await readProcessPosture(pid, this.hostView, { emptyCmdline: true });
    if (posture) attachPosture(id, posture);
    return id;
  }

  private async readAll(pids: readonly number[]): Promise<ProcessIdentity[]> {
    const out: ProcessIdentity[] = [];
    for (const pid of pids.slice(0, MAX_PER_ROLE)) {
      const id = await this.read(pid);
      if (id) out.push(id);
    }
    return out;
  }

  private async tie(at: number, kind: UserSpaceKernelKind, mapping: string, named: readonly number[]): Promise<void> {
    // The process that held the nonce is read first: gone before it was read, it ties nothing.
    const up = selfOrAncestor(at, kind.kernel);
    const kernel = up !== undefined && kernelKindOf(up) === kind ? up : undefined;
    // Taken before the reads and checked after: a kernel pid reused meanwhile is never looked up after destroy.
    const kernelStart = kernel === undefined ? undefined : startTicks(kernel);
    const held = await this.read(at);
    if (!held) return;
    const under = (pid: number): boolean => kernel !== undefined && pid !== kernel && selfOrAncestor(parentPid(pid) ?? 0, kind.kernel) === kernel;
    const spaces = at === kernel ? [] : named.filter((p) => p !== at && under(p) && mappingCount(p, kind) > 0);
    const parent = kernel === undefined ? undefined : parentPid(kernel);
    const cgroup = kernel === undefined ? undefined : procText(`/proc/${kernel}/cgroup`);
    const servers =
      parent === undefined || parent <= 1 || cgroup === undefined
        ? []
        : childrenOf(parent).filter(
            (p) => p !== kernel && kernelKindOf(p) === kind && argv0(p) === kind.fileServer && procText(`/proc/${p}/cgroup`) === cgroup,
          );
    this.kind = kind;
    this.kernelPid = kernel;
    this.found = {
      kernel: kind.name,
      tie: `this execution's nonce in host pid ${at}'s memory at ${mapping}, mapped from ${kind.memoryFile}`,
      addressSpaces: [held, ...(await this.readAll(spaces.slice(0, MAX_PER_ROLE - 1)))],
      kernels: kernel === undefined ? [] : await this.readAll([kernel]),
      fileServers: await this.readAll(servers),
    };
    if (kernel !== undefined && kernelStart !== undefined && this.found.kernels.length > 0 && startTicks(kernel) === kernelStart)
      this.found.kernelStarted = kernelStart;
  }
}
