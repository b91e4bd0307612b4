/**
 * The user-space kernel tracker against real processes shaped like runsc's (a kernel that maps its memory file, a
 * first stub, an address space that maps the same file, a file server beside the kernel; runsc's stubs have no
 * argv[0], Python needs one): the nonce must be found in pages of the memory file present in the address space,
 * never in its ordinary memory, and every role read by the host.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, linkSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KernelCarrierTracker, carriersAfterDestroy, programMark, survivorName } from '../../lab/kernel-carriers.js';
import { parentPid, startTicks } from '../../core/proc-files.js';
import { findInKernelMemory, memoryMappings, scanKernelMemory, USER_SPACE_KERNELS } from '../../lab/user-space-kernel.js';

const root = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), 'sc-usk-'));
const fake = join(dir, 'runsc');
try {
  linkSync(realpathSync('/usr/bin/python3'), fake);
} catch {
  copyFileSync(realpathSync('/usr/bin/python3'), fake);
}
const started: ChildProcess[] = [];
/** The kernels' descendants, which a kill of the kernel leaves running. */
const strays: number[] = [];
afterAll(() => {
  for (const c of started) c.kill('SIGKILL');
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The kernel maps its memory file and starts a first stub (holds the file, maps nothing, like runsc's ptrace
 * platform), which starts the address space: it maps the file too. Modes: memfd, the address space touches 3 MiB
 * of it and writes the nonce across the end of the first 1 MiB read chunk; heap, it keeps the nonce only in its
 * ordinary memory; kernel, the kernel writes it through its own mapping and the address space never touches it.
 */
const SPACE = `
import mmap, sys, time
m = mmap.mmap(int(sys.argv[3]), 4 << 20)
n = sys.argv[1].encode()
if sys.argv[2] == 'memfd':
    m[0:3 << 20] = bytes(3 << 20)
    at = (1 << 20) - 3
    m[at:at + len(n)] = n
elif sys.argv[2] == 'heap':
    keep = bytearray(n * 4)
elif sys.argv[2] in ('mark', 'both'):
    # Its own pages of the file (the kernel gives each address space its own): the mark, and with 'both' the nonce.
    mark = sys.argv[4].encode()
    base = 3 << 20
    m[base:base + (1 << 20)] = bytes(1 << 20)
    m[base + 8192:base + 8192 + len(mark)] = mark
    if sys.argv[2] == 'both':
        m[base + 65536:base + 65536 + len(n)] = n
print('ready', flush=True)
time.sleep(60)
`;
const FIRST = `
import os, sys, time
pids = []
for mode, mark in ((sys.argv[2], ''), (sys.argv[6], sys.argv[7])):
    if mode == 'none':
        continue
    pid = os.fork()
    if pid == 0:
        os.execv(sys.argv[4], ['stub', '-c', sys.argv[5], sys.argv[1], mode, sys.argv[3], mark])
    pids.append(str(pid))
print(' '.join(pids), flush=True)
time.sleep(60)
`;
const KERNEL = `
import mmap, os, sys, time
nonce, mode, me, first, space, marked, mark = sys.argv[1:8]
fd = os.memfd_create('runsc-memory', 0)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
if mode == 'kernel':
    m[(3 << 20) + 5:(3 << 20) + 5 + len(nonce)] = nonce.encode()
if os.fork() == 0:
    os.execv(me, ['first-stub', '-c', first, nonce, mode, str(fd), me, space, marked, mark])
time.sleep(60)
`;

async function start(argv0: string, args: string[], lines: number): Promise<{ pid: number; lines: string[] }> {
  const c = spawn(fake, ['-c', ...args], { argv0, stdio: ['ignore', 'pipe', 'inherit'], env: { PYTHONHOME: '/usr', PATH: '/usr/bin:/bin' } });
  started.push(c);
  const got = await new Promise<string[]>((resolve, reject) => {
    let text = '';
    c.stdout?.on('data', (d: Buffer) => {
      text += d.toString();
      const all = text.split('\n').filter((l) => l !== '');
      if (all.length >= lines) resolve(all);
    });
    c.once('exit', (code) => reject(new Error(`${argv0} exited ${code}`)));
  });
  return { pid: c.pid ?? -1, lines: got };
}

/**
 * A kernel, its first stub, its address space and a file server beside the kernel; with `marked`, a second address
 * space of a program the payload ran, holding the mark ('both': and the nonce, like a fork of the payload).
 */
async function fakeSandbox(nonce: string, mode: 'memfd' | 'heap' | 'kernel', marked: { mode: 'mark' | 'both'; mark: string } | undefined = undefined) {
  const kernel = await start('runsc-sandbox', [KERNEL, nonce, mode, fake, FIRST, SPACE, marked?.mode ?? 'none', marked?.mark ?? ''], marked ? 3 : 2);
  const [space, markedSpace] = (kernel.lines.find((l) => /^\d/.test(l)) ?? '').split(' ').map(Number);
  expect(kernel.lines.filter((l) => l === 'ready')).toHaveLength(marked ? 2 : 1);
  const first = parentPid(space ?? -1) ?? -1;
  strays.push(space ?? -1, first, ...(markedSpace !== undefined ? [markedSpace] : []));
  const gofer = await start('runsc-gofer', ['import time; print("up", flush=True); time.sleep(60)'], 1);
  return { kernel: kernel.pid, first, space: space ?? -1, marked: markedSpace ?? -1, gofer: gofer.pid };
}

describe.skipIf(!root)('user-space kernel carriers (real processes shaped like runsc)', () => {
  const gvisor = USER_SPACE_KERNELS[0]!;

  it("finds the nonce in the address space's mapping of the memory file (across a read chunk's edge) and reads every role", async () => {
    const nonce = 'n0nce-usk-a1b2c3d4e5f6';
    const box = await fakeSandbox(nonce, 'memfd');
    expect(findInKernelMemory(box.space, gvisor, nonce).foundIn).toMatch(/^[0-9a-f]+-[0-9a-f]+$/);
    const tracker = new KernelCarrierTracker(nonce);
    await tracker.tick([box.kernel, box.first, box.space], new Set());
    const found = tracker.result;
    expect(found?.tie).toMatch(new RegExp(`nonce in host pid ${box.space}'s memory at [0-9a-f]+-[0-9a-f]+, mapped from /memfd:runsc-memory`));
    expect(found?.addressSpaces.map((p) => p.pid)).toEqual([box.space]);
    // The kernel is the nearest ancestor by that name, past the first stub (which maps nothing).
    expect(found?.kernels.map((p) => p.pid)).toEqual([box.kernel]);
    expect(found?.fileServers.map((p) => p.pid)).toEqual([box.gofer]);
    // Another execution's nonce is not there.
    expect(findInKernelMemory(box.space, gvisor, 'n0nce-usk-0therexec000').foundIn).toBeUndefined();
  });

  it('finds nothing where the nonce is only in ordinary memory', async () => {
    const nonce = 'n0nce-usk-heap0nly9876';
    const box = await fakeSandbox(nonce, 'heap');
    const look = findInKernelMemory(box.space, gvisor, nonce);
    expect(look.mappings).toBeGreaterThan(0);
    expect(look.foundIn).toBeUndefined();
    const tracker = new KernelCarrierTracker(nonce);
    for (let i = 0; i < 3; i++) await tracker.tick([box.kernel, box.first, box.space], new Set());
    expect(tracker.result).toBeUndefined();
  });

  it('reads only pages present in the address space, and searches the kernel only where the box has no stub', async () => {
    const nonce = 'n0nce-usk-kernel0nly55';
    const box = await fakeSandbox(nonce, 'kernel');
    // The memory file holds the nonce, but the address space never touched that page: a read that faulted it in
    // would find it (and allocate the box's memory).
    expect(findInKernelMemory(box.space, gvisor, nonce)).toEqual({ mappings: 1, bytesRead: 0 });
    const withStubs = new KernelCarrierTracker(nonce);
    for (let i = 0; i < 3; i++) await withStubs.tick([box.kernel, box.first, box.space], new Set());
    expect(withStubs.result).toBeUndefined();
    // Only the first stub so far (no address space mapped yet): wait, rather than search the kernel's whole file.
    const early = new KernelCarrierTracker(nonce);
    await early.tick([box.kernel, box.first], new Set());
    expect(early.result).toBeUndefined();
    const kernelOnly = new KernelCarrierTracker(nonce);
    await kernelOnly.tick([box.kernel], new Set());
    expect(kernelOnly.result?.addressSpaces.map((p) => p.pid)).toEqual([box.kernel]);
    expect(kernelOnly.result?.kernels.map((p) => p.pid)).toEqual([box.kernel]);
  });

  it("finds the marked program's address space: the mark and, read whole, not the nonce; never the payload's own", async () => {
    const nonce = 'n0nce-usk-mark0000aa11';
    const mark = programMark(nonce);
    expect(mark).not.toContain(nonce);
    const box = await fakeSandbox(nonce, 'memfd', { mode: 'mark', mark });
    const tracker = new KernelCarrierTracker(nonce, mark);
    // The first tick ties the payload's address space; the mark is looked for from the next one.
    await tracker.tick([box.kernel, box.first, box.space, box.marked], new Set());
    expect(tracker.result?.addressSpaces[0]?.pid).toBe(box.space);
    await tracker.tick([box.kernel, box.first, box.space, box.marked], new Set());
    const marked = tracker.result?.marked;
    expect(marked?.addressSpace.pid).toBe(box.marked);
    expect(marked?.kernel?.pid).toBe(box.kernel);
    expect(marked?.tie).toMatch(
      new RegExp(`program mark in host pid ${box.marked}'s memory at [0-9a-f]+-[0-9a-f]+, mapped from /memfd:runsc-memory, and not its nonce`),
    );
    const scan = scanKernelMemory(box.marked, gvisor, [mark, nonce], undefined, [nonce]);
    expect([scan.found.has(mark), scan.found.has(nonce), scan.complete]).toEqual([true, false, true]);
    // Without a mark to look for, nothing is marked.
    const plain = new KernelCarrierTracker(nonce);
    for (let i = 0; i < 2; i++) await plain.tick([box.kernel, box.first, box.space, box.marked], new Set());
    expect(plain.result?.marked).toBeUndefined();
  });

  it('after destroy, tells a marked process that still runs (same pid, same start) from one that is gone or a reused pid', async () => {
    const nonce = 'n0nce-usk-gone0000cc33';
    const mark = programMark(nonce);
    expect(survivorName(nonce, true)).toContain(mark);
    expect(survivorName(nonce, true)).not.toContain(nonce);
    const box = await fakeSandbox(nonce, 'memfd', { mode: 'mark', mark });
    const tracker = new KernelCarrierTracker(nonce, mark);
    for (let i = 0; i < 2; i++) await tracker.tick([box.kernel, box.first, box.space, box.marked], new Set());
    const usk = tracker.result;
    const marked = usk?.marked;
    expect(marked?.started).toEqual({ addressSpace: startTicks(box.marked), kernel: startTicks(box.kernel) });
    // The kernel's start is taken at the nonce's tie too, before any mark is found.
    expect(usk?.kernelStarted).toBe(startTicks(box.kernel));
    if (!usk || !marked) return;
    expect(await carriersAfterDestroy(usk, 500)).toEqual([
      { pid: box.marked, role: 'address space', running: true },
      { pid: box.kernel, role: 'kernel', running: true },
    ]);
    // No marked program found: the kernel that held the nonce is still looked up (a kernel that outlives destroy keeps the box alive).
    expect(await carriersAfterDestroy({ ...usk, marked: undefined }, 500)).toEqual([{ pid: box.kernel, role: 'kernel', running: true }]);
    process.kill(box.marked, 'SIGKILL');
    // A pid seen with another start is another process: the kernel's pid reused counts as gone.
    const reused = { ...usk, marked: { ...marked, started: { addressSpace: marked.started?.addressSpace ?? 0, kernel: (marked.started?.kernel ?? 0) + 1 } } };
    expect(await carriersAfterDestroy(reused, 500)).toEqual([
      { pid: box.marked, role: 'address space', running: false },
      { pid: box.kernel, role: 'kernel', running: false },
    ]);
    // Without the kernel's start nothing can be said.
    expect(await carriersAfterDestroy({ ...usk, kernelStarted: undefined, marked: { ...marked, started: { addressSpace: 1 } } })).toBeUndefined();
    expect(await carriersAfterDestroy({ ...usk, kernelStarted: undefined, marked: undefined })).toBeUndefined();
  });

  it('marks nothing where the same address space holds the nonce too (a fork of the payload before its exec)', async () => {
    const nonce = 'n0nce-usk-both0000bb22';
    const mark = programMark(nonce);
    const box = await fakeSandbox(nonce, 'memfd', { mode: 'both', mark });
    const scan = scanKernelMemory(box.marked, gvisor, [mark, nonce], undefined, [nonce]);
    expect(scan.found.has(nonce)).toBe(true);
    expect(scan.complete).toBe(false);
    const tracker = new KernelCarrierTracker(nonce, mark);
    for (let i = 0; i < 3; i++) await tracker.tick([box.kernel, box.first, box.space, box.marked], new Set());
    expect(tracker.result?.addressSpaces.length).toBeGreaterThan(0);
    expect(tracker.result?.marked).toBeUndefined();
  });
});

describe('memory file mappings', () => {
  it('takes readable mappings of that file only, highest first', () => {
    const maps = [
      '00400000-00401000 r--s 00003000 00:01 41411 /memfd:runsc-memory (deleted)',
      '7f0000000000-7f0000100000 rw-s 00000000 00:01 41411 /memfd:runsc-memory (deleted)',
      '7f0000200000-7f0000300000 ---s 00000000 00:01 41411 /memfd:runsc-memory (deleted)',
      '7f0000400000-7f0000500000 rw-s 00000000 00:01 41412 /memfd:runsc-memory-usage (deleted)',
      '7f0000600000-7f0000700000 rw-p 00000000 00:00 0 [heap]',
    ].join('\n');
    expect(memoryMappings(maps, '/memfd:runsc-memory').map((m) => m.line)).toEqual(['7f0000000000-7f0000100000', '00400000-00401000']);
  });
});
