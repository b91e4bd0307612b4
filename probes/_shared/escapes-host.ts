/**
 * Host-side facts the capability-escape probes compute before the box starts (in `args` and
 * `hostPrecondition`, which run on the host): where a decoy file lives on its filesystem, its
 * file handle, and where its bytes sit on the block device. Read-only: nothing here changes the host.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbeContext } from '../../model/probe.js';

/** The decoy file the escapes aim at: a canary file in the run's decoy directory (the control-plane token when there is one). */
export function decoyTarget(ctx: ProbeContext): { path: string; rel: string } {
  const names = Object.keys(ctx.canaries.files);
  const rel = names.find((n) => n.endsWith('token')) ?? names[0] ?? 'control-plane/token';
  return { path: join(ctx.decoyDir, rel), rel };
}

export interface FsLocation {
  major: number;
  minor: number;
  fstype: string;
  /** The mount source, e.g. /dev/vda. */
  source: string;
  /** The decoy's path from the root of its filesystem (what a fresh mount of the device shows). */
  pathInFs: string;
}

const unescapeMount = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Parses one /proc/self/mountinfo text: the mount holding `path` (longest mount point that prefixes it) on device `dev`. */
export function locateInMountinfo(mountinfo: string, path: string, major: number, minor: number): FsLocation | undefined {
  let best: { point: string; root: string; fstype: string; source: string } | undefined;
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const f = left.split(' ');
    const [fstype = '', source = ''] = right.split(' ');
    if (f[2] !== `${major}:${minor}` || f[3] === undefined || f[4] === undefined) continue;
    const point = unescapeMount(f[4]);
    const inside = point === '/' || path === point || path.startsWith(`${point}/`);
    if (inside && (!best || point.length > best.point.length)) best = { point, root: unescapeMount(f[3]), fstype, source: unescapeMount(source) };
  }
  if (!best) return undefined;
  const rest = best.point === '/' ? path : path.slice(best.point.length);
  const pathInFs = `${best.root === '/' ? '' : best.root}${rest}`.replace(/\/+/g, '/');
  return { major, minor, fstype: best.fstype, source: best.source, pathInFs };
}

/** glibc's dev_t split (gnu_dev_major / gnu_dev_minor). */
export function devMajor(dev: number): number {
  const d = BigInt(dev);
  return Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
}
export function devMinor(dev: number): number {
  const d = BigInt(dev);
  return Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
}

export function fsLocation(path: string): FsLocation | undefined {
  try {
    const real = realpathSync(path);
    const st = statSync(real);
    return locateInMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'), real, devMajor(st.dev), devMinor(st.dev));
  } catch {
    return undefined;
  }
}

/** A block-device filesystem: what a mount or a raw read of the device could reach. */
export const onBlockDevice = (loc: FsLocation | undefined): boolean => loc !== undefined && loc.major !== 0 && loc.source.startsWith('/dev/');

// name_to_handle_at and FIEMAP have no Node API: one short host-side Python call each (python3 is a requirement of sandcheck).
const HOST_HELPER = `
import ctypes, fcntl, json, os, struct, sys
what, path = sys.argv[1], sys.argv[2]
if what == "handle":
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("I", buf, 0, 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), buf, ctypes.byref(mount_id), 0) != 0:
        print(json.dumps({"error": os.strerror(ctypes.get_errno())}))
    else:
        size, kind = struct.unpack_from("Ii", buf, 0)
        print(json.dumps({"type": kind, "hex": buf.raw[8:8 + size].hex()}))
else:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        req = bytearray(32 + 56)
        struct.pack_into("QQIIII", req, 0, 0, 0xFFFFFFFFFFFFFFFF, 1, 0, 1, 0)
        fcntl.ioctl(fd, 0xC020660B, req, True)
        mapped = struct.unpack_from("I", req, 20)[0]
        logical, physical, length = struct.unpack_from("QQQ", req, 32)
        flags = struct.unpack_from("I", req, 32 + 40)[0]
        print(json.dumps({"mapped": mapped, "logical": logical, "physical": physical, "length": length, "flags": flags}))
    finally:
        os.close(fd)
`;

function hostHelper(what: 'handle' | 'extent', path: string): Record<string, unknown> | undefined {
  try {
    const out = execFileSync('python3', ['-c', HOST_HELPER, what, path], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] });
    const parsed: unknown = JSON.parse(out);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const cache = new Map<string, unknown>();
function cached<T>(key: string, make: () => T): T {
  if (!cache.has(key)) cache.set(key, make());
  return cache.get(key) as T;
}

export interface FileHandle {
  type: number;
  hex: string;
}

/** The decoy's file handle as the host's kernel encodes it (name_to_handle_at), or why there is none. */
export function fileHandleOf(path: string): FileHandle | { error: string } {
  return cached(`handle:${path}`, () => {
    const r = hostHelper('handle', path);
    if (r && typeof r['type'] === 'number' && typeof r['hex'] === 'string') return { type: r['type'], hex: r['hex'] };
    return { error: typeof r?.['error'] === 'string' ? r['error'] : 'name_to_handle_at could not run on the host' };
  });
}

// FIEMAP extent flags that mean "no stable place on the device": UNKNOWN, DELALLOC, ENCODED, DATA_ENCRYPTED, NOT_ALIGNED, DATA_INLINE, DATA_TAIL.
const NO_PLACE = 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200 | 0x400;

/** Byte offset of the decoy's first block on its device (synced to disk first), or why there is none. Not cached: a run's decoy is written once, but a test may plant another. */
export function physicalOffsetOf(path: string): { offset: number } | { error: string } {
  const r = hostHelper('extent', path);
  if (!r) return { error: 'FIEMAP could not run on the host' };
  const flags = Number(r['flags']);
  if (Number(r['mapped']) < 1) return { error: 'the file has no extent on the device' };
  if ((flags & NO_PLACE) !== 0 || Number(r['logical']) !== 0)
    return { error: `its first extent has no stable device offset (FIEMAP flags 0x${flags.toString(16)})` };
  return { offset: Number(r['physical']) };
}

/** Why the host itself cannot open the device read-only (e.g. EPERM from the machine's own policy), or undefined when it can. Opens and closes; reads nothing. */
export function hostCannotOpen(loc: FsLocation): string | undefined {
  try {
    const st = statSync(loc.source);
    if (!st.isBlockDevice() || devMajor(st.rdev) !== loc.major || devMinor(st.rdev) !== loc.minor)
      return `${loc.source} is not the block device ${loc.major}:${loc.minor}`;
    closeSync(openSync(loc.source, 'r'));
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'unknown error';
  }
}

/** The host kernel loads modules: /proc/modules exists (a kernel built without module support has none). */
export const hostLoadsModules = (): boolean => existsSync('/proc/modules');
