/**
 * The user-space kernel tracker against real processes shaped like runsc's (a kernel that maps its memory file,
 * an address space it started that maps the same file (runsc's stubs have no argv[0]; Python needs one), a file server beside it): the nonce must be found in the
 * memory file's mapping of the address space, never in its ordinary memory, and the roles read by the host.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, linkSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KernelCarrierTracker } from '../../harness/kernel-carriers.js';
import { findInKernelMemory, memoryMappings, USER_SPACE_KERNELS } from '../../lab/user-space-kernel.js';

const root = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), 'sc-usk-'));
const fake = join(dir, 'runsc');
try {
  linkSync(realpathSync('/usr/bin/python3'), fake);
} catch {
  copyFileSync(realpathSync('/usr/bin/python3'), fake);
}
const started: ChildProcess[] = [];
/** Address spaces: the kernels' children, which a kill of the kernel leaves running. */
const spaces: number[] = [];
afterAll(() => {
  for (const c of started) c.kill('SIGKILL');
  for (const pid of spaces) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The kernel: maps its memory file, then starts an address space (argv[0] empty, like runsc's stubs) that maps it too. */
const KERNEL = `
import mmap, os, sys, time
nonce, mode, me = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.memfd_create('runsc-memory', 0)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
child = '''
import mmap, sys, time
m = mmap.mmap(%d, 4 << 20)
n = sys.argv[1].encode()
if sys.argv[2] == 'memfd':
    at = (2 << 20) - 3
    m[at:at + len(n)] = n
else:
    keep = bytearray(n * 4)
print('ready', flush=True)
time.sleep(60)
''' % fd
pid = os.fork()
if pid == 0:
    os.execv(me, ['stub', '-c', child, nonce, mode])
print(pid, flush=True)
time.sleep(60)
`;

async function start(argv0: string, args: string[]): Promise<{ pid: number; firstLine: string }> {
  const c = spawn(fake, ['-c', ...args], { argv0, stdio: ['ignore', 'pipe', 'inherit'], env: { PYTHONHOME: '/usr', PATH: '/usr/bin:/bin' } });
  started.push(c);
  const firstLine = await new Promise<string>((resolve, reject) => {
    c.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim()));
    c.once('exit', (code) => reject(new Error(`${argv0} exited ${code}`)));
  });
  return { pid: c.pid ?? -1, firstLine };
}

/** A kernel, its address space and a file server; resolves once the address space wrote (or kept) the nonce. */
async function fakeSandbox(nonce: string, mode: 'memfd' | 'heap') {
  const kernel = await start('runsc-sandbox', [KERNEL, nonce, mode, fake]);
  const space = Number(kernel.firstLine);
  spaces.push(space);
  const gofer = await start('runsc-gofer', ['import time; print("up", flush=True); time.sleep(60)']);
  for (let i = 0; i < 100; i++) {
    let maps = '';
    try {
      maps = readFileSync(`/proc/${space}/maps`, 'utf8');
    } catch {
      // Not started yet.
    }
    if (memoryMappings(maps, '/memfd:runsc-memory').length > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 300));
  return { kernel: kernel.pid, space, gofer: gofer.pid };
}

describe.skipIf(!root)('user-space kernel carriers (real processes shaped like runsc)', () => {
  const gvisor = USER_SPACE_KERNELS[0]!;

  it("finds the nonce in the address space's mapping of the memory file (across a read chunk's edge) and reads every role", async () => {
    const nonce = 'n0nce-usk-a1b2c3d4e5f6';
    const box = await fakeSandbox(nonce, 'memfd');
    expect(findInKernelMemory(box.space, gvisor, nonce).foundIn).toMatch(/^[0-9a-f]+-[0-9a-f]+$/);
    const tracker = new KernelCarrierTracker(nonce);
    await tracker.tick([box.kernel, box.space], new Set());
    const found = tracker.result;
    expect(found?.tie).toMatch(new RegExp(`nonce in host pid ${box.space}'s memory at [0-9a-f]+-[0-9a-f]+, mapped from /memfd:runsc-memory`));
    expect(found?.addressSpaces.map((p) => p.pid)).toEqual([box.space]);
    expect(found?.kernels.map((p) => p.pid)).toEqual([box.kernel]);
    expect(found?.fileServers.map((p) => p.pid)).toEqual([box.gofer]);
    expect(found?.kernels[0]?.effectiveUid).toBe(0);
  });

  it('finds nothing where the nonce is only in ordinary memory, or is another execution\'s', async () => {
    const nonce = 'n0nce-usk-heap0nly9876';
    const box = await fakeSandbox(nonce, 'heap');
    const look = findInKernelMemory(box.space, gvisor, nonce);
    expect(look.mappings).toBeGreaterThan(0);
    expect(look.bytesRead).toBeGreaterThan(0);
    expect(look.foundIn).toBeUndefined();
    const tracker = new KernelCarrierTracker(nonce);
    for (let i = 0; i < 3; i++) await tracker.tick([box.kernel, box.space], new Set());
    expect(tracker.result).toBeUndefined();
    const other = new KernelCarrierTracker('n0nce-usk-a1b2c3d4e5f6');
    await other.tick([box.kernel, box.space], new Set());
    expect(other.result).toBeUndefined();
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
