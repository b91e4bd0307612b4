import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import { execa } from 'execa';

/**
 * One long-lived python3 per harness process that calls mount(2) and umount2(2) through ctypes, so that an
 * environment's tmpfs costs two pipe round trips instead of two process spawns (the harness's largest CPU cost
 * per box: a spawn from a 200 MB Node process). It dies with the harness (PR_SET_PDEATHSIG) and when its stdin
 * closes. Where it cannot start or dies, every call falls back to the mount and umount commands.
 */
const HELPER = String.raw`
import ctypes, errno, fcntl, json, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9, 0, 0, 0)
if os.getppid() == 1:
    sys.exit(0)
LOOP_CTL_GET_FREE, LOOP_CONFIGURE, LO_FLAGS_AUTOCLEAR = 0x4C82, 0x4C0A, 4

def mount(source, target, fstype, flags, data):
    ctypes.set_errno(0)
    if libc.mount(source.encode(), target.encode(), fstype.encode(), ctypes.c_ulong(flags), data.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def copy_extents(template, image, size):
    # Only the template's data extents are written: the copy stays as sparse as a fresh mkfs.
    src = os.open(template, os.O_RDONLY | os.O_CLOEXEC)
    try:
        dst = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(dst, size)
            off = 0
            while True:
                try:
                    start = os.lseek(src, off, os.SEEK_DATA)
                except OSError as e:
                    if e.errno == errno.ENXIO:
                        break
                    raise
                end = os.lseek(src, start, os.SEEK_HOLE)
                while start < end:
                    chunk = os.pread(src, min(1 << 20, end - start), start)
                    if not chunk:
                        break
                    os.pwrite(dst, chunk, start)
                    start += len(chunk)
                off = end
        finally:
            os.close(dst)
    finally:
        os.close(src)

def attach(image):
    # LOOP_CONFIGURE with autoclear: the device detaches itself when its last user (the mount) goes.
    info = struct.pack("=QQQQQIIII64s64s32sQQ", 0, 0, 0, 0, 0, 0, 0, 0, LO_FLAGS_AUTOCLEAR, b"", b"", b"", 0, 0)
    ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    fd = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(32):
            n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
            lo = os.open("/dev/loop%d" % n, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.ioctl(lo, LOOP_CONFIGURE, struct.pack("=II", fd, 0) + info + bytes(64))
                return lo, "/dev/loop%d" % n
            except OSError as e:
                os.close(lo)
                if e.errno != errno.EBUSY:
                    raise
        raise OSError(errno.EBUSY, "no free loop device")
    finally:
        os.close(fd)
        os.close(ctl)

def handle(req):
    if req["op"] == "mount":
        mount(req["source"], req["target"], req["fstype"], req["flags"], req["data"])
    elif req["op"] == "mount-image":
        copy_extents(req["template"], req["image"], req["size"])
        lo, dev = attach(req["image"])
        try:
            mount(dev, req["target"], "ext4", req["flags"], "")
        finally:
            os.close(lo)
    else:
        ctypes.set_errno(0)
        if libc.umount2(req["target"].encode(), 2 if req.get("lazy") else 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))

for line in sys.stdin:
    req = json.loads(line)
    try:
        handle(req)
        err, message = 0, ""
    except OSError as e:
        err, message = e.errno or -1, e.strerror or str(e)
    sys.stdout.write(json.dumps({"id": req["id"], "errno": err, "message": message}) + "\n")
    sys.stdout.flush()
`;

export const MS_NOSUID = 2;
export const MS_NODEV = 4;
export const MS_NOATIME = 1024;

const SBIN_PATH = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
const EINVAL = 22;
const ENOENT = 2;
const EBUSY = 16;

export interface MountResult {
  ok: boolean;
  /** The system's words for a failure (strerror), or the command's stderr on the fallback. */
  message: string;
  /** The target was not a mount point (nothing to unmount). */
  notMounted: boolean;
  busy: boolean;
}

type Request =
  | { op: 'mount'; source: string; target: string; fstype: string; flags: number; data: string }
  | { op: 'mount-image'; template: string; image: string; size: number; target: string; flags: number }
  | { op: 'umount'; target: string; lazy: boolean };

class Helper {
  private next = 1;
  private readonly waiting = new Map<number, (r: { errno: number; message: string } | undefined) => void>();
  private dead = false;

  constructor(private readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    child.on('error', () => this.fail());
    child.on('exit', () => this.fail());
    child.stdin.on('error', () => this.fail());
    createInterface({ input: child.stdout }).on('line', (line) => {
      let reply: { id?: unknown; errno?: unknown; message?: unknown };
      try {
        reply = JSON.parse(line) as typeof reply;
      } catch {
        return;
      }
      const done = typeof reply.id === 'number' ? this.waiting.get(reply.id) : undefined;
      if (!done || typeof reply.id !== 'number') return;
      this.waiting.delete(reply.id);
      done({ errno: typeof reply.errno === 'number' ? reply.errno : -1, message: typeof reply.message === 'string' ? reply.message : '' });
      this.idle();
    });
    this.idle();
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Resolves undefined when the helper died before answering (the caller falls back to the command). */
  call(req: Request): Promise<{ errno: number; message: string } | undefined> {
    if (this.dead) return Promise.resolve(undefined);
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      // An answer is awaited: keep the process alive until it comes (the last umount of a run included).
      (this.child.stdout as Socket).ref();
      this.child.ref();
      this.child.stdin.write(`${JSON.stringify({ id, ...req })}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }

  private idle(): void {
    if (this.waiting.size === 0) {
      (this.child.stdout as Socket).unref();
      this.child.unref();
    }
  }

  private fail(): void {
    this.dead = true;
    for (const done of this.waiting.values()) done(undefined);
    this.waiting.clear();
  }
}

let helper: Helper | undefined;

function theHelper(): Helper | undefined {
  if (helper?.alive) return helper;
  if (helper) return undefined; // it died once: the commands from now on
  try {
    const child = spawn('python3', ['-I', '-S', '-c', HELPER], { stdio: ['pipe', 'pipe', 'ignore'], env: SBIN_PATH });
    helper = new Helper(child);
  } catch {
    return undefined;
  }
  return helper;
}

/** Ends the helper (tests; a harness process ends it by exiting). */
export function stopMountHelper(): void {
  helper?.close();
  helper = undefined;
}

export async function mountFs(source: string, target: string, fstype: string, flags: number, data: string): Promise<MountResult> {
  const r = await theHelper()?.call({ op: 'mount', source, target, fstype, flags, data });
  if (r) return { ok: r.errno === 0, message: r.message, notMounted: false, busy: r.errno === EBUSY };
  const opts = [...(flags & MS_NOSUID ? ['nosuid'] : []), ...(flags & MS_NODEV ? ['nodev'] : []), data].filter((o) => o !== '').join(',');
  const c = await execa('mount', ['-t', fstype, '-o', opts, source, target], { reject: false, env: SBIN_PATH, extendEnv: false });
  return { ok: c.exitCode === 0, message: c.stderr.trim() || `exit ${c.exitCode ?? 'signal'}`, notMounted: false, busy: false };
}

export async function unmountFs(target: string, lazy: boolean): Promise<MountResult> {
  const r = await theHelper()?.call({ op: 'umount', target, lazy });
  if (r) return { ok: r.errno === 0, message: r.message, notMounted: r.errno === EINVAL || r.errno === ENOENT, busy: r.errno === EBUSY };
  const c = await execa('umount', [...(lazy ? ['-l'] : []), target], { reject: false, env: SBIN_PATH, extendEnv: false });
  return { ok: c.exitCode === 0, message: c.stderr.trim(), notMounted: /not mounted|no mount point/.test(c.stderr), busy: /busy/.test(c.stderr) };
}

/**
 * Copies the data extents of an ext4 `template` into a new sparse `image` of `size` bytes, attaches it to a
 * free loop device with autoclear and mounts it on `target`: one round trip instead of mkfs, losetup and
 * mount. Undefined when the helper is not there (the caller makes the image with the commands).
 */
export async function mountImageCopy(template: string, image: string, size: number, target: string, flags: number): Promise<MountResult | undefined> {
  const r = await theHelper()?.call({ op: 'mount-image', template, image, size, target, flags });
  return r && { ok: r.errno === 0, message: r.message, notMounted: false, busy: r.errno === EBUSY };
}
