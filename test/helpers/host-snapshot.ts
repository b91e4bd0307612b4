/**
 * What the probes must leave exactly as they found it: the run's decoy files (bytes, mode, mtime), the run's
 * decoy sockets beside them (inode and mode), its decoy keys, the host's mounts, its kernel modules and keyrings,
 * no device node, shared-memory object, System V IPC object or Unix socket of theirs anywhere they may make one.
 * The machine is shared with other test runs that mount and unmount their own things meanwhile, so the
 * mount comparison is scoped: nothing added under this test's own directories or named by a payload
 * (`sc-escape`), nothing removed that is not another sandcheck run's or a container runtime's own.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';

export interface HostSnapshot {
  decoys: Record<string, string>;
  /** The run's decoy sockets and files beside its decoy home (decoy-run, decoy-tmp): kind, inode and mode, or the bytes' hash. */
  decoyPlaces: Record<string, string>;
  /** This run's decoy keys (the host decoy process keeps them in its session keyring): a payload must not unlink them. */
  ownKeys: string[];
  mounts: string[];
  /** Module names from /proc/modules; null on a kernel without module support. */
  modules: string[] | null;
  /** Device nodes a payload made (sc-escape-disk-*) in the places it may make them. */
  nodes: string[];
  /** Key descriptions /proc/keys shows (type and description; serials differ between lookups of nothing). */
  keys: string[];
  /** Names in /dev/shm and System V IPC keys (shm, msg, sem): shared kernel objects a payload could leave. */
  ipc: string[];
  /** Unix socket files where a payload could leave one (/tmp, /run, /dev/shm, two levels deep). */
  sockets: string[];
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/** mount id, mount point, fs root, device, type, source: enough to tell one mount from another. */
function mountLines(text: string): string[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [left = '', right = ''] = l.split(' - ');
      const f = left.split(' ');
      return `${f[0]} ${f[4]} ${f[3]} ${f[2]} ${right.split(' ').slice(0, 2).join(' ')}`;
    });
}

/** A file's bytes, mode and mtime; a socket's (or other special file's) inode and mode: replaced or touched shows. */
async function fingerprint(file: string): Promise<string> {
  const st = await stat(file);
  if (!st.isFile()) return `${st.isSocket() ? 'socket' : 'special'} ino ${st.ino} mode ${st.mode.toString(8)} mtime ${st.mtimeMs}`;
  return `${createHash('sha256')
    .update(await readFile(file))
    .digest('hex')} mode ${st.mode.toString(8)} mtime ${st.mtimeMs}`;
}

export async function hostSnapshot(decoyDir: string): Promise<HostSnapshot> {
  const decoys: Record<string, string> = {};
  for (const file of await walk(decoyDir)) decoys[relative(decoyDir, file)] = await fingerprint(file);
  const scratch = dirname(decoyDir);
  const decoyPlaces: Record<string, string> = {};
  for (const place of ['decoy-run', 'decoy-tmp'])
    for (const file of await walk(join(scratch, place))) decoyPlaces[relative(scratch, file)] = await fingerprint(file);
  // The scratch directory is named sandcheck-<run id>-<random>.
  const runId = /^sandcheck-(.+)-[0-9a-f]{6}$/.exec(basename(scratch))?.[1];
  const modules = await readFile('/proc/modules', 'utf8').then(
    (t) =>
      t
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[0] ?? '')
        .sort(),
    () => null,
  );
  const nodes: string[] = [];
  for (const dir of ['/dev', '/dev/shm', '/tmp', '/'])
    nodes.push(...(await readdir(dir).catch(() => [])).filter((n) => n.startsWith('sc-escape')).map((n) => join(dir, n)));
  const keys = (await readFile('/proc/keys', 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((l) =>
      l
        .split(/\s+/)
        .slice(7)
        .join(' ')
        .replace(/: [^:]*$/, ''),
    )
    .sort();
  const ipc = (await readdir('/dev/shm').catch(() => [] as string[])).map((n) => `/dev/shm/${n}`);
  for (const kind of ['shm', 'msg', 'sem']) {
    const lines = (await readFile(`/proc/sysvipc/${kind}`, 'utf8').catch(() => '')).split('\n').slice(1).filter(Boolean);
    ipc.push(...lines.map((l) => `sysv ${kind} key ${l.trim().split(/\s+/)[0] ?? '?'}`));
  }
  const sockets: string[] = [];
  const sockWalk = async (dir: string, depth: number): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const p = join(dir, e.name);
      if (e.isSocket()) sockets.push(p);
      else if (e.isDirectory() && depth > 0) await sockWalk(p, depth - 1);
    }
  };
  for (const dir of ['/tmp', '/run', '/dev/shm']) await sockWalk(dir, 2);
  // A socket some live process has bound is that program's, running now (a browser or tsx another test file started):
  // what a payload leaves is a socket file nobody serves once its box is gone.
  const bound = await boundSocketPaths();
  const ownKeys = runId ? keys.filter((k) => k.includes(`sandcheck-decoy:${runId}:`) || k.endsWith(`sandcheck-decoy-${runId}`)) : [];
  return {
    decoys,
    decoyPlaces,
    ownKeys,
    mounts: mountLines(await readFile('/proc/self/mountinfo', 'utf8')),
    modules,
    nodes,
    keys,
    ipc: ipc.sort(),
    sockets: sockets.filter((p) => !bound.has(p)).sort(),
  };
}

/** Paths of the Unix sockets live processes have bound, as this network namespace's /proc/net/unix lists them. */
export async function boundSocketPaths(): Promise<Set<string>> {
  const text = await readFile('/proc/net/unix', 'utf8').catch(() => '');
  const paths = text
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/)[7])
    .filter((p): p is string => p?.startsWith('/') === true);
  return new Set(paths);
}

const OTHERS = /sandcheck|sccmd|\/run\/netns\/|docker|containerd|runsc|\/sc-/;
/**
 * Sockets of the container engines, of other sandcheck runs' state, the IPC pipe of a tsx process and a headless
 * browser's singleton socket that other test files start meanwhile (left behind when one is killed): a payload's
 * own socket is none of these.
 */
const OTHER_SOCKETS =
  /\/run\/(sandcheck|docker|containerd|podman|netns)\/|\/sandcheck-|docker|containerd|runsc|podman|^\/tmp\/tsx-\d+\/\d+\.pipe$|^\/tmp\/org\.chromium\.Chromium\.\w+\/Singleton/;

/** Differences that are this test's (or its payloads') doing; empty when the host is as it was. */
export function hostChanges(before: HostSnapshot, after: HostSnapshot, ownDirs: readonly string[]): string[] {
  const changes: string[] = [];
  for (const [k, v] of Object.entries(before.decoys)) if (after.decoys[k] !== v) changes.push(`decoy ${k}: ${v} → ${after.decoys[k] ?? 'gone'}`);
  for (const k of Object.keys(after.decoys)) if (!(k in before.decoys)) changes.push(`decoy ${k} appeared`);
  for (const [k, v] of Object.entries(before.decoyPlaces))
    if (after.decoyPlaces[k] !== v) changes.push(`decoy place ${k}: ${v} → ${after.decoyPlaces[k] ?? 'gone'}`);
  for (const k of Object.keys(after.decoyPlaces)) if (!(k in before.decoyPlaces)) changes.push(`decoy place ${k} appeared`);
  changes.push(...before.ownKeys.filter((k) => !after.ownKeys.includes(k)).map((k) => `decoy key gone: ${k}`));
  const was = new Set(before.mounts);
  const is = new Set(after.mounts);
  for (const m of after.mounts) {
    const point = m.split(' ')[1] ?? '';
    if (!was.has(m) && (m.includes('sc-escape') || ownDirs.some((d) => point === d || point.startsWith(`${d}/`)))) changes.push(`mount added: ${m}`);
  }
  for (const m of before.mounts) if (!is.has(m) && !OTHERS.test(m.split(' ')[1] ?? '')) changes.push(`mount removed: ${m}`);
  if (JSON.stringify(before.modules) !== JSON.stringify(after.modules))
    changes.push(`kernel modules: ${JSON.stringify(before.modules)} → ${JSON.stringify(after.modules)}`);
  changes.push(...after.nodes.filter((n) => !before.nodes.includes(n)).map((n) => `device node left: ${n}`));
  // Added only: another run's objects may go meanwhile; what a payload adds and leaves is the leak.
  const added = (was: readonly string[], is: readonly string[]): string[] => is.filter((x) => !was.includes(x));
  // Decoy keys are the runs' own (this run's exist before and after). Each container of another test running meanwhile
  // has a session keyring: runc names it `_ses.<id>`, crun (podman's runtime here) the bare container id.
  changes.push(
    ...added(before.keys, after.keys)
      .filter((k) => !/sandcheck-decoy|^keyring (?:_ses\.)?[0-9a-f]{64}$/.test(k))
      .map((k) => `key added: ${k}`),
  );
  changes.push(...added(before.ipc, after.ipc).map((x) => `ipc object left: ${x}`));
  changes.push(
    ...added(before.sockets, after.sockets)
      .filter((x) => !OTHER_SOCKETS.test(x) && !ownDirs.some((d) => x.startsWith(`${d}/`)))
      .map((x) => `socket left: ${x}`),
  );
  return changes;
}
