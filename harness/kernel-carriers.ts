import { attachPosture, readHostView, readProcessIdentity, readProcessPosture, type HostView, type ProcessIdentity } from '../lab/host-process.js';
import { procText } from '../lab/proc-files.js';
import { argv0, childrenOf, findInKernelMemory, kernelKindOf, mappingCount, parentPid, selfOrAncestor, type UserSpaceKernelKind } from '../lab/user-space-kernel.js';
import type { UserSpaceKernel } from './model/observation.js';

/**
 * Looks per process before it is given up (an address space that existed before this execution gets two: the
 * payload's is a new one) and bytes of memory read per execution (a look reads up to 16 MiB per mapping).
 */
const MAX_LOOKS_NEW = 10;
const MAX_LOOKS_OLD = 2;
const MAX_BYTES = 160 << 20;
/** Most processes of each role whose identity and posture are read. */
const MAX_PER_ROLE = 6;

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
  /** The box's pids at the first look: address spaces from before this execution. */
  private before: Set<number> | undefined;
  private bytes = 0;
  private found: UserSpaceKernel | undefined;
  private hostView: HostView | undefined;

  constructor(private readonly nonce: string) {}

  get result(): UserSpaceKernel | undefined {
    return this.found;
  }

  /** One look at the box's pids that are not its own program; does nothing once tied or out of budget. */
  async tick(pids: readonly number[], own: ReadonlySet<number>): Promise<void> {
    if (this.found || this.bytes >= MAX_BYTES) return;
    const candidates: { pid: number; kind: UserSpaceKernelKind; kernel: boolean }[] = [];
    for (const pid of pids) {
      const kind = own.has(pid) ? undefined : kernelKindOf(pid);
      if (kind) candidates.push({ pid, kind, kernel: argv0(pid) === kind.kernel });
    }
    this.before ??= new Set(pids);
    // Address spaces only: the payload's stack and heap (with its argv) are small mappings in them, while the
    // kernel maps its whole memory file (gigabytes) and is searched only where the box has no address spaces of
    // its own (a platform that runs the box's code inside the kernel's process).
    const spaces = candidates.filter((c) => !c.kernel && mappingCount(c.pid, c.kind) > 0);
    for (const c of spaces.length > 0 ? spaces : candidates) {
      const cap = this.before.has(c.pid) ? MAX_LOOKS_OLD : MAX_LOOKS_NEW;
      if ((this.looks.get(c.pid) ?? 0) >= cap || this.bytes >= MAX_BYTES) continue;
      this.looks.set(c.pid, (this.looks.get(c.pid) ?? 0) + 1);
      const look = findInKernelMemory(c.pid, c.kind, this.nonce, MAX_BYTES - this.bytes);
      this.bytes += look.bytesRead;
      if (look.foundIn !== undefined) {
        await this.tie(c.pid, c.kind, look.foundIn, candidates.map((x) => x.pid));
        return;
      }
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
    const kernel = selfOrAncestor(at, kind.kernel);
    const under = (pid: number): boolean => kernel !== undefined && pid !== kernel && selfOrAncestor(parentPid(pid) ?? 0, kind.kernel) === kernel;
    const spaces = [at, ...named.filter((p) => p !== at && under(p) && mappingCount(p, kind) > 0)];
    const parent = kernel === undefined ? undefined : parentPid(kernel);
    const cgroup = kernel === undefined ? undefined : procText(`/proc/${kernel}/cgroup`);
    const servers = parent === undefined || parent <= 1 ? [] : childrenOf(parent).filter((p) => p !== kernel && kernelKindOf(p) === kind && argv0(p) === kind.fileServer && procText(`/proc/${p}/cgroup`) === cgroup);
    const addressSpaces = await this.readAll(spaces);
    if (addressSpaces.length === 0) return;
    this.found = {
      kernel: kind.name,
      tie: `this execution's nonce in host pid ${at}'s memory at ${mapping}, mapped from ${kind.memoryFile}`,
      addressSpaces,
      kernels: kernel === undefined ? [] : await this.readAll([kernel]),
      fileServers: await this.readAll(servers),
    };
  }
}
