import { chmodSync, chownSync, constants, lstatSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, open, readFile, readlink, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { z } from 'zod';
import { SandcheckError } from '../../core/errors.js';
import { repairStateRoot, STATE_ROOT } from '../../core/state-root.js';
import type { FileKind, GotFile, PutFile } from '../../model/backend-contract.js';
import { kindOf, statEntry } from '../file-entry.js';
import { ownerAlive as processOwnerAlive, selfOwner } from '../shared/process-owner.js';
import { segmentsOf } from '../shared/workspace-path.js';
import { MS_NOATIME, MS_NODEV, MS_NOSUID, mountFs, mountImageCopy, unmountFs } from '../shared/mount-helper.js';

/**
 * The host side of an environment: `<stateDir>/<runId>-<envId>/` holds an ownership record and `fs/`,
 * a tmpfs of policy diskMb (or a plain directory) with `work/` (the box's /work) and `tmp/` (its /tmp).
 * The directories above `fs/` are root-owned 0711 so the box's uid can reach its bind sources and
 * nothing else. Every path from the harness is resolved without following links: the box owns the
 * files in `work/` and may have planted symlinks there.
 */

export const OwnerRecordSchema = z.strictObject({
  version: z.literal(1),
  runId: z.string(),
  envId: z.string(),
  ownerPid: z.number().int().positive(),
  ownerStartTime: z.number().int().nonnegative(),
  bootId: z.string(),
  mounted: z.boolean(),
  /** The disk image behind fs/ (outside the root, in the run's scratch directory): a sweep removes it too. */
  image: z.string().optional(),
  createdAt: z.string(),
});
export type OwnerRecord = z.infer<typeof OwnerRecordSchema>;

export interface Ownership {
  uid: number;
  gid: number;
}

export class EnvRoot {
  constructor(
    readonly root: string,
    /** A sized filesystem mounted on fs/ (true) or a plain directory. */
    readonly mounted: boolean,
    /** The ext4 image file behind fs/, when the workspace is a disk image (removed with the root). */
    readonly image?: string,
  ) {}
  get fs(): string {
    return join(this.root, 'fs');
  }
  get work(): string {
    return join(this.fs, 'work');
  }
  get tmp(): string {
    return join(this.fs, 'tmp');
  }
  get ownerFile(): string {
    return join(this.root, 'owner.json');
  }
  get resolvConf(): string {
    return join(this.root, 'resolv.conf');
  }
}

function errCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : String(err);
}

/** A root-owned, non-symlink directory with the given mode, created if missing (refuses anything else). */
export async function ensurePrivateDir(path: string, mode: number, uid: number | undefined): Promise<void> {
  // Synchronous here and in createEnvRoot: metadata calls in the state root, once per environment, each a
  // few µs of the kernel's time against a quarter of a millisecond of this process's through the thread pool.
  mkdirSync(path, { recursive: true, mode });
  // Boxes that run as another uid reach their workspaces through the state root: it must stay traversable.
  if (path.startsWith(`${STATE_ROOT}/`)) repairStateRoot();
  const st = lstatSync(path);
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', `state directory ${path} is not a directory owned by uid ${uid}; refusing to use it`);
  }
  chmodSync(path, mode);
}

export async function ownerRecord(runId: string, envId: string, mounted: boolean, image?: string): Promise<OwnerRecord> {
  const me = await selfOwner();
  return {
    version: 1,
    runId,
    envId,
    ownerPid: me.pid,
    ownerStartTime: me.startTime,
    bootId: me.bootId,
    mounted,
    ...(image !== undefined ? { image } : {}),
    createdAt: new Date().toISOString(),
  };
}

export async function writeOwner(env: EnvRoot, record: OwnerRecord): Promise<void> {
  const tmp = `${env.ownerFile}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o644 });
  renameSync(tmp, env.ownerFile);
}

export async function readOwner(file: string): Promise<OwnerRecord | undefined> {
  try {
    const parsed = OwnerRecordSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function ownerAlive(record: OwnerRecord): Promise<boolean> {
  return processOwnerAlive({ pid: record.ownerPid, startTime: record.ownerStartTime, bootId: record.bootId });
}

/** How fs/ is sized: a tmpfs (its pages are charged to the box's memory cgroup), or an ext4 image file. */
export type SizedFs = { kind: 'tmpfs'; bytes: number } | { kind: 'disk-image'; bytes: number; image: string; mkfs: string };

const SBIN_PATH = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

async function run(file: string, args: string[], what: string): Promise<void> {
  const r = await execa(file, args, { reject: false, env: SBIN_PATH, extendEnv: false });
  if (r.exitCode !== 0) throw new SandcheckError('HARNESS', `cannot ${what}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
}

async function makeImage(image: string, bytes: number, mkfs: string): Promise<void> {
  const fh = await open(image, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await fh.truncate(bytes);
  } finally {
    await fh.close();
  }
  // 4 KiB blocks, one inode per 32 KiB, no journal, no reserve: ~98 % of `bytes` is usable, small sizes included.
  await run(
    mkfs,
    ['-q', '-F', '-m', '0', '-b', '4096', '-i', '32768', '-O', '^has_journal,^resize_inode', '-E', 'root_owner=0:0,lazy_itable_init=1', image],
    'make the workspace filesystem',
  );
}

/** One freshly made image per size and run directory (unique per run, beside the environments' images); each environment gets a sparse copy. */
const templates = new Map<string, Promise<string>>();

function templateFor(fs: Extract<SizedFs, { kind: 'disk-image' }>): Promise<string> {
  const path = join(dirname(fs.image), `bwrap-disk-template-${fs.bytes}.img`);
  let made = templates.get(path);
  if (!made) {
    made = makeImage(path, fs.bytes, fs.mkfs).then(() => path);
    templates.set(path, made);
    // A failed attempt is not remembered: the next environment tries again (and reports its own error).
    made.catch(() => {
      templates.delete(path);
      void rm(path, { force: true });
    });
  }
  return made;
}

/**
 * Mounts the sized filesystem on `dir`. A disk image is an ext4 file of exactly `bytes`, loop-mounted: its
 * page cache can be written back and reclaimed, so the disk limit is reached before the memory limit (a
 * tmpfs of the same size would fill the memory cgroup first).
 */
async function mountSized(dir: string, mountName: string, fs: SizedFs): Promise<void> {
  if (fs.kind === 'tmpfs') {
    const r = await mountFs(mountName, dir, 'tmpfs', MS_NOSUID | MS_NODEV, `size=${fs.bytes},mode=0711`);
    if (!r.ok) throw new SandcheckError('HARNESS', `cannot mount the workspace tmpfs: ${r.message}`);
    return;
  }
  const template = await templateFor(fs);
  const viaHelper = await mountImageCopy(template, fs.image, fs.bytes, dir, MS_NOSUID | MS_NODEV | MS_NOATIME);
  if (!viaHelper?.ok) {
    // No helper, or a kernel without LOOP_CONFIGURE: the commands (their error, if any, is the one reported).
    await rm(fs.image, { force: true });
    await makeImage(fs.image, fs.bytes, fs.mkfs);
    // util-linux sets autoclear on the loop device: umount also detaches it.
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', fs.image, dir], 'mount the workspace disk image');
  }
  await chmod(dir, 0o711);
  await rm(join(dir, 'lost+found'), { recursive: true, force: true });
}

/**
 * Creates the environment root. With `sized` it mounts a sized filesystem on fs/ (the disk budget for
 * /work and /tmp together): a tmpfs named after the environment, so a leftover mount is recognisable in
 * /proc/mounts, or an ext4 image file mounted at fs/ of the environment's root.
 */
export async function createEnvRoot(
  root: string,
  mountName: string,
  sized: SizedFs | undefined,
  box: Ownership | undefined,
  owner: OwnerRecord,
): Promise<EnvRoot> {
  mkdirSync(root, { mode: 0o711 });
  chmodSync(root, 0o711);
  const env = new EnvRoot(root, sized !== undefined, sized?.kind === 'disk-image' ? sized.image : undefined);
  // The record comes first, so that a sweep never mistakes an environment being built for a stale one.
  await writeOwner(env, owner);
  try {
    mkdirSync(env.fs, { mode: 0o711 });
    if (sized !== undefined) await mountSized(env.fs, mountName, sized);
    mkdirSync(env.work, { mode: 0o700 });
    if (box) chownSync(env.work, box.uid, box.gid);
    if (sized !== undefined) {
      mkdirSync(env.tmp, { mode: 0o700 });
      chmodSync(env.tmp, 0o1777);
      if (box) chownSync(env.tmp, box.uid, box.gid);
    }
  } catch (err) {
    await removeEnvRoot(root, sized !== undefined, mountName, env.image);
    throw err;
  }
  return env;
}

/** Unmounts (if mounted) and removes the environment root; returns problems, never host paths. */
export async function removeEnvRoot(root: string, mounted: boolean, what: string, image?: string): Promise<string[]> {
  const problems: string[] = [];
  if (mounted) {
    const fs = join(root, 'fs');
    let r = await unmountFs(fs, false);
    if (!r.ok && !r.notMounted) {
      r = await unmountFs(fs, true);
      problems.push(`workspace filesystem of ${what} was busy at destroy${r.ok ? '; detached lazily' : ' and could not be unmounted'}`);
      if (!r.ok) return problems; // never rm -rf through a live mount
    }
  }
  try {
    await rm(root, { recursive: true, force: true });
    if (image !== undefined) await rm(image, { force: true });
  } catch (err) {
    problems.push(`workspace of ${what} could not be removed: ${errCode(err)}`);
  }
  return problems;
}

type ParentWalk = { ok: true; dir: string } | { ok: false; kind: GotFile['kind']; note: string };

/** Resolves the parent directory of `segs` under `base`, never through a symlink. */
async function walkParents(base: string, segs: string[], create: Ownership | undefined, rel: string): Promise<ParentWalk> {
  let dir = base;
  for (const seg of segs.slice(0, -1)) {
    const next = join(dir, seg);
    let st;
    try {
      st = await lstat(next);
    } catch {
      if (!create) return { ok: false, kind: 'missing', note: `"${seg}" does not exist` };
      await mkdir(next, { mode: 0o755 });
      await chown(next, create.uid, create.gid);
      dir = next;
      continue;
    }
    if (st.isSymbolicLink()) {
      if (create) throw new SandcheckError('HARNESS', `path "${rel}": "${seg}" is a symlink inside the workspace; refusing to follow it`);
      return { ok: false, kind: 'symlink', note: `"${seg}" on the way is a symlink; links are never followed, so nothing under it is read` };
    }
    if (!st.isDirectory()) {
      if (create) throw new SandcheckError('HARNESS', `path "${rel}": "${seg}" is not a directory`);
      return { ok: false, kind: 'other', note: `"${seg}" on the way is not a directory` };
    }
    dir = next;
  }
  return { ok: true, dir };
}

/**
 * Writes one input file. Writable inputs belong to the box's uid; read-only ones stay root's, 0444, and
 * are also bound read-only over themselves at exec.
 */
export async function putFile(work: string, f: PutFile, box: Ownership | undefined): Promise<string> {
  const segs = segmentsOf(f.path);
  const walk = await walkParents(work, segs, box ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }, f.path);
  if (!walk.ok) throw new SandcheckError('HARNESS', `cannot write "${f.path}": ${walk.note}`);
  const abs = join(walk.dir, segs[segs.length - 1] ?? '');
  try {
    const st = await lstat(abs);
    if (st.isDirectory()) throw new SandcheckError('HARNESS', `cannot write "${f.path}": it is a directory`);
    await unlink(abs); // whatever it was (a link the box planted included) is replaced, never written through
  } catch (err) {
    if (err instanceof SandcheckError) throw err;
  }
  // Read-only inputs keep special bits (a root-owned setuid binary stays one: the box's own nosuid, no_new_privs
  // and user namespace must neutralise it) but never a write bit.
  const mode = f.readOnly ? (f.mode ?? 0o444) & 0o7555 : (f.mode ?? 0o644);
  const fh = await open(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    await fh.writeFile(f.content);
    await fh.chmod(mode);
    if (box && !f.readOnly) await fh.chown(box.uid, box.gid);
  } finally {
    await fh.close();
  }
  return segs.join('/');
}

const NOT_OPENED: Partial<Record<FileKind, string>> = {
  fifo: 'a FIFO: never opened (a reader would block, or read what a writer pushes)',
  socket: 'a socket: never connected to',
  device: 'a device node: never opened',
  directory: 'a directory: not exported as a file',
  other: 'not a regular file: never opened',
};

/**
 * The download API for one workspace path: classified with lstat, never following a link. Only a regular
 * file with a single link and at most `maxBytes` is read (O_NOFOLLOW | O_NONBLOCK, then checked again on
 * the open descriptor). A symlink comes back with its target as stored in the box and no content; a
 * regular file with more than one link (`hardlink`) with its link count and no content, since its other
 * name may be a host file. Paths outside the workspace and paths through a symlinked directory are
 * refused without being resolved.
 */
export async function getFile(work: string, rel: string, maxBytes: number): Promise<GotFile> {
  let segs: string[];
  try {
    segs = segmentsOf(rel);
  } catch (err) {
    return { path: rel, kind: 'other', size: 0, note: `${err instanceof Error ? err.message : String(err)}; not read` };
  }
  const walk = await walkParents(work, segs, undefined, rel);
  if (!walk.ok) return { path: rel, kind: walk.kind, size: 0, note: walk.note };
  const abs = join(walk.dir, segs[segs.length - 1] ?? '');
  const { st, base } = await statEntry(abs, rel);
  if (!st) return base;
  const kind = base.kind;
  if (kind === 'symlink') {
    const target = await readlink(abs).catch(() => undefined);
    return { ...base, ...(target !== undefined ? { linkTarget: target } : {}), note: 'links are never followed' };
  }
  if (kind === 'hardlink') return { ...base, note: `a regular file with ${st.nlink} links (its other names may be outside the workspace); not read` };
  if (kind !== 'file') return { ...base, note: NOT_OPENED[kind] ?? 'not read' };
  if (st.size > maxBytes) return { ...base, note: `larger than ${maxBytes} bytes; not read` };
  // O_NOFOLLOW and O_NONBLOCK: a link or FIFO swapped in after lstat is refused, never followed or waited on.
  let fh;
  try {
    fh = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    return { ...base, kind: errCode(err) === 'ELOOP' ? 'symlink' : 'other', note: `changed under the exporter: could not open (${errCode(err)}); not read` };
  }
  try {
    const fst = await fh.stat();
    if (!fst.isFile() || fst.dev !== st.dev || fst.ino !== st.ino) {
      return { path: rel, kind: kindOf(fst), size: fst.size, nlink: fst.nlink, note: 'changed under the exporter; not read' };
    }
    if (fst.nlink > 1)
      return {
        path: rel,
        kind: 'hardlink',
        size: fst.size,
        nlink: fst.nlink,
        note: `a regular file with ${fst.nlink} links (gained one under the exporter); not read`,
      };
    if (fst.size > maxBytes) return { ...base, size: fst.size, note: `larger than ${maxBytes} bytes; not read` };
    const buf = Buffer.alloc(Math.min(fst.size, maxBytes) + 1);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    if (bytesRead > maxBytes) return { ...base, size: bytesRead, note: `larger than ${maxBytes} bytes; not read` };
    return { ...base, size: bytesRead, content: new Uint8Array(buf.subarray(0, bytesRead)) };
  } finally {
    await fh.close();
  }
}
