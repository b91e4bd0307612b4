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
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9, 0, 0, 0)
if os.getppid() == 1:
    sys.exit(0)
for line in sys.stdin:
    req = json.loads(line)
    ctypes.set_errno(0)
    if req["op"] == "mount":
        rc = libc.mount(req["source"].encode(), req["target"].encode(), req["fstype"].encode(), ctypes.c_ulong(req["flags"]), req["data"].encode())
    else:
        rc = libc.umount2(req["target"].encode(), 2 if req.get("lazy") else 0)
    err = ctypes.get_errno() if rc != 0 else 0
    sys.stdout.write(json.dumps({"id": req["id"], "errno": err, "message": os.strerror(err) if err else ""}) + "\n")
    sys.stdout.flush()
`;

export const MS_NOSUID = 2;
export const MS_NODEV = 4;

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

type Request = { op: 'mount'; source: string; target: string; fstype: string; flags: number; data: string } | { op: 'umount'; target: string; lazy: boolean };

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
