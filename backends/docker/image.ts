import { createHash } from 'node:crypto';
import { lstat, readlink, realpath } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { execa } from 'execa';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { DockerClient } from './client.js';
import { DEFAULT_BOX_UID } from './options.js';
import { packStream, type LazyPackEntry } from './tar.js';
import { ROOTFS_CACHE_DIR, forgetRootfsCache, readRootfsCache, systemKey, writeRootfsCache } from './rootfs-cache.js';

/**
 * The probe image, built without any registry: the host's own Debian Python (its packages' files plus
 * the shared libraries they load), dash as /bin/sh, a few coreutils (true, false, sleep, cat, env, ls, id)
 * and an /etc/passwd naming the box user, packed into a
 * root filesystem tar streamed (files read as it goes) and `docker import`ed. The tag is the hash of that tar, so the same
 * files give the same tag and an existing tag is reused. A root run keeps the file list and hash between runs
 * (rootfs-cache.ts), while the packages and files are unchanged.
 */

export const IMAGE_REPO = 'sandcheck-python';
export const LABEL_IMAGE = 'sandcheck.image';
export const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const TOOL_ENV = { PATH: IMAGE_PATH, LC_ALL: 'C' };
const EXTRA_TOOLS = ['true', 'false', 'sleep', 'cat', 'env', 'ls', 'id'];

export interface ProbeRootfs {
  /** The tar, packed again on each call (same files, same bytes); files are read as the stream reaches them. */
  tar(): Readable;
  /** sha256 of the tar (hex). */
  hash: string;
  /** The tar's size in bytes. */
  bytes: number;
  files: number;
  pythonVersion: string;
  /** reused: file list and hash from the cache (see rootfs-cache.ts); stored: built and kept there; off: no cache. */
  cache: 'reused' | 'stored' | 'off';
}

async function run(file: string, args: string[]): Promise<string> {
  const r = await execa(file, args, { env: TOOL_ENV, extendEnv: false, reject: false, timeout: 60_000 });
  if (r.exitCode !== 0 && r.stdout.length === 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
  return r.stdout;
}

/** /usr/bin/python3 → "3.11" (the Debian packages are named after it). */
async function pythonVersion(): Promise<string> {
  let real: string;
  try {
    real = await realpath('/usr/bin/python3');
  } catch {
    throw new SandcheckError('BACKEND_UNAVAILABLE', 'no /usr/bin/python3 on this machine to build the probe image from', {
      hint: 'apt-get install -y python3-minimal, or pass an image of your own that has python3 (--image)',
    });
  }
  const m = /python(3\.\d+)$/.exec(real);
  if (!m?.[1])
    throw new SandcheckError('BACKEND_UNAVAILABLE', `cannot tell the Python version of ${real}`, {
      hint: 'pass an image of your own that has python3 (--image)',
    });
  return m[1];
}

/** Host path → path inside the image, with directory symlinks (the usrmerge /lib → usr/lib) resolved. */
async function canonical(path: string): Promise<string> {
  return join(await realpath(dirname(path)), posix.basename(path));
}

async function packageFiles(version: string): Promise<string[]> {
  const pkgs = [`python${version}-minimal`, `libpython${version}-minimal`, `libpython${version}-stdlib`];
  const listed = (await run('dpkg', ['-L', ...pkgs])).split('\n').filter((p) => p.startsWith('/') && !p.startsWith('/usr/share/'));
  const out: string[] = [];
  for (const p of listed) {
    const st = await lstat(p).catch(() => undefined);
    if (st && (st.isFile() || st.isSymbolicLink())) out.push(p);
  }
  return out;
}

/** Byte-compiled modules Debian generated at install time (not in the package lists), for fast imports. */
async function pycFiles(pyFiles: readonly string[], version: string): Promise<string[]> {
  const tag = `cpython-${version.replace('.', '')}`;
  const out: string[] = [];
  for (const f of pyFiles) {
    if (!f.endsWith('.py')) continue;
    const pyc = join(dirname(f), '__pycache__', `${posix.basename(f, '.py')}.${tag}.pyc`);
    if ((await lstat(pyc).catch(() => undefined))?.isFile()) out.push(pyc);
  }
  return out;
}

/** The shared libraries the binaries load (ldd), each with the symlink chain to the real file. */
async function sharedLibraries(binaries: readonly string[]): Promise<string[]> {
  const text = await run('ldd', [...binaries]);
  const libs = new Set<string>();
  for (const line of text.split('\n')) {
    const arrow = /=>\s+(\/\S+)/.exec(line);
    const loader = /^\s*(\/\S*ld-linux\S*)/.exec(line);
    const p = arrow?.[1] ?? loader?.[1];
    if (p) libs.add(p);
  }
  const out: string[] = [];
  for (const l of libs) {
    out.push(l);
    // The symlink's target too (libfoo.so.1 → libfoo.so.1.2.3).
    let cur = l;
    for (let i = 0; i < 8; i++) {
      const st = await lstat(cur).catch(() => undefined);
      if (!st?.isSymbolicLink()) break;
      const target = await readlink(cur);
      cur = posix.isAbsolute(target) ? target : join(dirname(cur), target);
      out.push(cur);
    }
  }
  return out;
}

const built = new Map<number, Promise<ProbeRootfs>>();

export interface BuildRootfsOptions {
  boxUid?: number;
  /**
   * Where the build's file list and hash are kept between runs (see rootfs-cache.ts); null: none. Given explicitly,
   * the build is not shared with other calls in this process (tests).
   */
  cacheDir?: string | null;
}

/**
 * Builds the probe root filesystem tar from this machine's Python (deterministic: same files, same bytes).
 * Built once per process and box uid.
 */
export function buildProbeRootfs(options: BuildRootfsOptions = {}): Promise<ProbeRootfs> {
  const boxUid = options.boxUid ?? DEFAULT_BOX_UID;
  if (options.cacheDir !== undefined) return buildRootfs(boxUid, options.cacheDir);
  let p = built.get(boxUid);
  if (!p) {
    p = buildRootfs(boxUid, process.geteuid?.() === 0 ? ROOTFS_CACHE_DIR : null);
    built.set(boxUid, p);
    p.catch(() => built.delete(boxUid));
  }
  return p;
}

/** The host files the image takes (canonical paths), and whether dash is among them: the slow part (ldd). */
async function collectFiles(version: string): Promise<{ files: string[]; dash: boolean }> {
  const python = `/usr/bin/python${version}`;
  let files: string[];
  try {
    files = await packageFiles(version);
  } catch (err) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', `cannot list the Python ${version} package files: ${errorMessage(err)}`, {
      hint: 'the offline image needs a Debian-family host with python3 installed; or pass an image of your own (--image)',
    });
  }
  const dynload = files.filter((f) => f.includes('/lib-dynload/') && f.endsWith('.so'));
  const dash = (await lstat('/usr/bin/dash').catch(() => undefined))?.isFile() ? '/usr/bin/dash' : undefined;
  // A few coreutils a code interpreter's image normally has (and probes expect, e.g. /bin/true as an ELF sample).
  const tools: string[] = [];
  for (const t of EXTRA_TOOLS) if ((await lstat(`/usr/bin/${t}`).catch(() => undefined))?.isFile()) tools.push(`/usr/bin/${t}`);
  const libs = await sharedLibraries([python, ...dynload, ...(dash ? [dash] : []), ...tools]);
  const all = new Set<string>();
  for (const f of [...files, ...(await pycFiles(files, version)), ...libs, ...(dash ? [dash] : []), ...tools]) all.add(await canonical(f));
  return { files: [...all].sort(), dash: dash !== undefined };
}

/** The archive's entries in order, and a fingerprint of them with their sources' inode, size, mode and mtime. */
async function entriesOf(files: readonly string[], dash: boolean, version: string, boxUid: number): Promise<{ sorted: LazyPackEntry[]; fingerprint: string }> {
  const entries = new Map<string, LazyPackEntry>();
  const sources = createHash('sha256');
  const symlink = (name: string, target: string): void => {
    entries.set(name, { name, type: 'symlink', linkname: target, mode: 0o777, uid: 0, gid: 0 });
  };
  const dir = (name: string, mode = 0o755): void => {
    if (!entries.has(name)) entries.set(name, { name, type: 'directory', mode, uid: 0, gid: 0 });
  };
  for (const d of ['usr', 'usr/bin', 'usr/lib', 'usr/lib64', 'usr/sbin', 'etc', 'proc', 'dev', 'sys', 'run', 'var', 'var/tmp']) dir(d);
  dir('root', 0o700);
  dir('tmp', 0o1777);
  dir('work', 0o1777);
  for (const [l, t] of [
    ['bin', 'usr/bin'],
    ['lib', 'usr/lib'],
    ['lib64', 'usr/lib64'],
    ['sbin', 'usr/sbin'],
  ] as const) {
    symlink(l, t);
  }
  for (const abs of files) {
    const rel = abs.replace(/^\/+/, '');
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) dir(parts.slice(0, i).join('/'));
    const st = await lstat(abs);
    sources.update(`${abs} ${st.ino} ${st.size} ${st.mode} ${st.mtimeMs}\n`);
    if (st.isSymbolicLink()) symlink(rel, await readlink(abs));
    else entries.set(rel, { name: rel, type: 'file', mode: st.mode & 0o755, uid: 0, gid: 0, source: abs });
  }
  symlink('usr/bin/python3', `python${version}`);
  if (dash) symlink('usr/bin/sh', 'dash');
  const text = (name: string, body: string, mode = 0o644): void => {
    entries.set(name, { name, type: 'file', mode, uid: 0, gid: 0, content: Buffer.from(body) });
  };
  text(
    'etc/passwd',
    `root:x:0:0:root:/root:/bin/sh\nsandbox:x:${boxUid}:${boxUid}:sandcheck box:/work:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n`,
  );
  text('etc/group', `root:x:0:\nsandbox:x:${boxUid}:\nnogroup:x:65534:\n`);
  for (const f of ['etc/hosts', 'etc/hostname', 'etc/resolv.conf']) text(f, '');

  const sorted = [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of sorted)
    sources.update(
      JSON.stringify([e.name, e.type, e.mode, e.linkname ?? '', e.source ?? '', e.content ? createHash('sha256').update(e.content).digest('hex') : '']),
    );
  return { sorted, fingerprint: sources.digest('hex') };
}

async function buildRootfs(boxUid: number, cacheDir: string | null): Promise<ProbeRootfs> {
  const version = await pythonVersion();
  const key = cacheDir !== null ? await systemKey(version, boxUid) : '';
  const cached = cacheDir !== null ? readRootfsCache(cacheDir, boxUid) : undefined;
  const usable = cached?.key === key ? cached : undefined;
  // Every file of the cached list still there, with the inode, size, mode and mtime it had: its hash stands.
  const again = usable ? await entriesOf(usable.files, usable.dash, version, boxUid).catch(() => undefined) : undefined;
  if (cacheDir !== null && usable && again?.fingerprint === usable.fingerprint) {
    // Bytes that do not hash to the kept tag fail the stream, and the cache goes: the next run builds afresh.
    const tar = (): Readable => checked(packStream(again.sorted), usable.hash).once('error', () => forgetRootfsCache(cacheDir, boxUid));
    return { tar, hash: usable.hash, bytes: usable.bytes, files: again.sorted.length, pythonVersion: version, cache: 'reused' };
  }
  const collected = await collectFiles(version);
  const { sorted, fingerprint } = await entriesOf(collected.files, collected.dash, version, boxUid);
  // Hashed as it streams: the ~45 MB tar is never held (kept, it was most of a Docker run's peak RSS).
  const { hash, bytes } = await digest(packStream(sorted));
  const stored =
    cacheDir !== null && writeRootfsCache(cacheDir, boxUid, { version: 1, key, files: collected.files, dash: collected.dash, fingerprint, hash, bytes });
  return { tar: () => checked(packStream(sorted), hash), hash, bytes, files: sorted.length, pythonVersion: version, cache: stored ? 'stored' : 'off' };
}

async function digest(tar: Readable): Promise<{ hash: string; bytes: number }> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of tar) {
    const b = chunk as Buffer;
    h.update(b);
    bytes += b.byteLength;
  }
  return { hash: h.digest('hex'), bytes };
}

/**
 * The tar again, failing if its bytes no longer hash to the tag (a file changed since it was hashed). The last chunk
 * (with the archive's end) is held back until the hash matches: a reader never gets a complete archive of other bytes.
 */
export function checked(tar: Readable, hash: string): Readable {
  const h = createHash('sha256');
  return Readable.from(
    (async function* () {
      let last: Buffer | undefined;
      for await (const chunk of tar) {
        const b = chunk as Buffer;
        h.update(b);
        if (last) yield last;
        last = b;
      }
      if (h.digest('hex') !== hash) {
        throw new SandcheckError('BACKEND_UNAVAILABLE', 'the Python files changed while the probe image was built (another hash the second time)', {
          hint: 'run again once package upgrades are done',
        });
      }
      if (last) yield last;
    })(),
    { objectMode: false },
  );
}

export interface EnsureImageOptions {
  /** Labels the image with the run that built it. */
  runId?: string;
  boxUid?: number;
  /** Called with what happened, for progress output and timings. */
  onBuilt?: (r: { tag: string; reused: boolean; buildMs: number; importMs: number; bytes: number }) => void;
}

/** The probe image on this daemon: `sandcheck-python:<hash>`, imported unless that tag is already there. */
export async function ensureProbeImage(client: DockerClient, options: EnsureImageOptions = {}): Promise<string> {
  const t0 = performance.now();
  const rootfs = await buildProbeRootfs(options.boxUid !== undefined ? { boxUid: options.boxUid } : {});
  const t1 = performance.now();
  const tag = rootfs.hash.slice(0, 16);
  const ref = `${IMAGE_REPO}:${tag}`;
  if (await client.inspectImage(ref)) {
    options.onBuilt?.({ tag: ref, reused: true, buildMs: t1 - t0, importMs: 0, bytes: rootfs.bytes });
    return ref;
  }
  const changes = [
    `ENV PATH=${IMAGE_PATH}`,
    'ENV LANG=C.UTF-8',
    'WORKDIR /work',
    // One label per instruction: Podman's compat API reads `LABEL a=1 b=2` as the single label a="1 b=2".
    `LABEL ${LABEL_IMAGE}=python${rootfs.pythonVersion}`,
    `LABEL sandcheck.content=${rootfs.hash}`,
    ...(options.runId ? [`LABEL sandcheck.run=${options.runId}`] : []),
  ];
  try {
    await client.importImage(rootfs.tar(), IMAGE_REPO, tag, changes);
  } catch (err) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', `cannot import the probe image into the daemon: ${errorMessage(err)}`, { cause: err });
  }
  if (!(await client.inspectImage(ref))) throw new SandcheckError('BACKEND_UNAVAILABLE', `the daemon accepted the probe image but has no ${ref} afterwards`);
  options.onBuilt?.({ tag: ref, reused: false, buildMs: t1 - t0, importMs: performance.now() - t1, bytes: rootfs.bytes });
  return ref;
}

/** For `--image`: the user's own image must already be on the daemon (sandcheck never pulls). */
export async function checkUserImage(client: DockerClient, ref: string): Promise<string> {
  if (!(await client.inspectImage(ref))) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', `the image "${ref}" is not on the Docker daemon (${client.endpoint})`, {
      hint: `sandcheck never pulls: \`docker pull ${ref}\` or \`docker load\` it on that daemon first (it needs python3 on PATH)`,
    });
  }
  return ref;
}
