import { createHash } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  constants as fsc,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  unlinkSync,
  type BigIntStats,
} from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import { z } from 'zod';
import { mkdirWithTraversableParents } from './state-root.js';

/**
 * The ownership journal: one append-only file per run listing every host resource the run creates,
 * written *before* the resource exists (processes: the moment they exist), so that whatever kills the
 * run, a later run or `sandcheck clean` can remove exactly what it owned, by recorded identity.
 */
export const ROOT_JOURNAL_DIR = '/run/sandcheck/owners';

/** Descriptions of the decoy keys a run puts in the kernel keyring (lab/host-decoys.ts). */
export const DECOY_KEY_DESCRIPTION = /^sandcheck-decoy:[A-Za-z0-9][A-Za-z0-9_-]{0,62}:(session|user)$/;

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const AbsPath = z
  .string()
  .max(4096)
  .refine((p) => isAbsolute(p) && normalize(p) === p && p !== '/', { error: 'expected a normalised absolute path' });

const Decimal = z.string().regex(/^\d{1,20}$/);
/** Which inode a path held when it was recorded (bigint stats as decimal strings: inode numbers pass 2^53). */
export const InodeIdentitySchema = z.strictObject({ dev: Decimal, ino: Decimal });
export type InodeIdentity = z.infer<typeof InodeIdentitySchema>;

export const OwnedResourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('process'), pid: z.number().int().positive(), startTime: z.number().int().nonnegative(), name: z.string().max(64) }),
  z.strictObject({ kind: z.literal('dir'), path: AbsPath }),
  z.strictObject({ kind: z.literal('netns'), name: z.string().regex(/^sc-[A-Za-z0-9_-]{1,62}$/) }),
  z.strictObject({
    kind: z.literal('cgroup'),
    path: AbsPath.refine((p) => p.startsWith('/sys/fs/cgroup/'), { error: 'expected a path under /sys/fs/cgroup' }),
  }),
  z.strictObject({ kind: z.literal('mount'), path: AbsPath }),
  z.strictObject({ kind: z.literal('key'), description: z.string().regex(DECOY_KEY_DESCRIPTION) }),
  /**
   * A unix socket the run listens on. With `inode` (its ctime too: an inode number freed and reused at the same path
   * must not pass for ours) it is provably ours at any path; without, only at a path that carries the run id.
   */
  z.strictObject({ kind: z.literal('socket'), path: AbsPath, inode: InodeIdentitySchema.extend({ ctimeNs: Decimal }).optional() }),
  /** A regular file the run wrote (a state file holding a token): provably ours by inode and content hash, or by its name. */
  z.strictObject({
    kind: z.literal('file'),
    path: AbsPath,
    inode: InodeIdentitySchema.optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
  }),
]);
export type OwnedResource = z.infer<typeof OwnedResourceSchema>;

export const JournalOwnerSchema = z.strictObject({
  op: z.literal('run'),
  runId: z.string().regex(RUN_ID),
  pid: z.number().int().positive(),
  startTime: z.number().int().nonnegative(),
  bootId: z.string().max(64),
  createdAt: z.string().max(64),
});
export type JournalOwner = z.infer<typeof JournalOwnerSchema>;

const JournalLineSchema = z.union([
  JournalOwnerSchema,
  z.strictObject({ op: z.literal('own'), resource: OwnedResourceSchema }),
  z.strictObject({ op: z.literal('release'), resource: OwnedResourceSchema }),
]);

/** /run/sandcheck/owners for root; otherwise a private directory of this user (the runtime dir, else the temp dir). */
export function defaultJournalDir(): string {
  if (process.env['SANDCHECK_OWNERSHIP_DIR']) return process.env['SANDCHECK_OWNERSHIP_DIR'];
  if (process.getuid?.() === 0) return ROOT_JOURNAL_DIR;
  return join(process.env['XDG_RUNTIME_DIR'] ?? tmpdir(), `sandcheck-owners-${process.getuid?.() ?? 'user'}`);
}

/** Identity of a process as /proc/<pid>/stat gives it: field 22, start time in clock ticks since boot. */
export function processStartTime(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isSafeInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

export function readBootIdSync(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

export type OwnedPath = Extract<OwnedResource, { kind: 'socket' | 'file' }>;

export const inodeIdentity = (st: BigIntStats): InodeIdentity => ({ dev: st.dev.toString(), ino: st.ino.toString() });

/** A recorded file's content is read for its hash only up to this size: a state file is far smaller. */
const MAX_HASHED_BYTES = 1 << 20;

function sha256OfNoFollow(path: string, ino: bigint): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile() || st.ino !== ino || st.size > BigInt(MAX_HASHED_BYTES)) return undefined;
    const hash = createHash('sha256');
    const buf = Buffer.alloc(64 * 1024);
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) hash.update(buf.subarray(0, n));
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a recorded socket or file is still the one the run made: the same type (never through a symlink), and
 * the same inode (and ctime, content hash) when those were recorded. `other`: something else is at the path now,
 * which is not ours to remove. Throws when the path cannot be looked at (so a sweep keeps the record).
 */
export function ownedPathState(r: OwnedPath): 'ours' | 'gone' | 'other' {
  let st: BigIntStats | undefined;
  try {
    st = lstatSync(r.path, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return 'gone';
    throw err;
  }
  if (!st) return 'gone';
  if (r.kind === 'socket') {
    if (!st.isSocket()) return 'other';
    if (r.inode && (r.inode.dev !== st.dev.toString() || r.inode.ino !== st.ino.toString() || r.inode.ctimeNs !== st.ctimeNs.toString())) return 'other';
    return 'ours';
  }
  if (!st.isFile()) return 'other';
  if (r.inode && (r.inode.dev !== st.dev.toString() || r.inode.ino !== st.ino.toString())) return 'other';
  if (r.sha256 && sha256OfNoFollow(r.path, st.ino) !== r.sha256) return 'other';
  return 'ours';
}

/** Unlinks a recorded socket or file only while it is still the one recorded; anything else at its path stays. */
export function removeOwnedPath(r: OwnedPath): 'removed' | 'gone' {
  if (ownedPathState(r) !== 'ours') return 'gone';
  try {
    unlinkSync(r.path);
    return 'removed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
}

export const resourceKey = (r: OwnedResource): string =>
  r.kind === 'process'
    ? `process ${r.pid}@${r.startTime}`
    : r.kind === 'netns'
      ? `netns ${r.name}`
      : r.kind === 'key'
        ? `key ${r.description}`
        : `${r.kind} ${r.path}`;

export interface OwnershipJournal {
  readonly runId: string;
  readonly path: string;
  /** Record before creating (synchronous: a SIGKILL right after still finds the line on disk). */
  own(resource: OwnedResource): void;
  /** The resource was removed normally. */
  release(resource: OwnedResource): void;
  /** Records a just-spawned process by pid and start time; false if it is already gone. */
  ownProcess(pid: number, name: string): OwnedResource | undefined;
  /** Everything was released: the journal goes. */
  close(): void;
}

/** Opens this run's journal (exclusively: a run id is never reused). */
export function openOwnershipJournal(runId: string, dir = defaultJournalDir()): OwnershipJournal {
  if (!RUN_ID.test(runId)) throw new Error(`invalid run id for the ownership journal: ${JSON.stringify(runId)}`);
  mkdirWithTraversableParents(dir, 0o700);
  const path = join(dir, `${runId}.jsonl`);
  const owner: JournalOwner = {
    op: 'run',
    runId,
    pid: process.pid,
    startTime: processStartTime(process.pid) ?? 0,
    bootId: readBootIdSync(),
    createdAt: new Date().toISOString(),
  };
  appendFileSync(path, `${JSON.stringify(owner)}\n`, { flag: 'wx', mode: 0o600 });
  const append = (line: unknown): void => appendFileSync(path, `${JSON.stringify(line)}\n`);
  return {
    runId,
    path,
    own: (resource) => append({ op: 'own', resource: OwnedResourceSchema.parse(resource) }),
    release: (resource) => append({ op: 'release', resource }),
    ownProcess(pid, name) {
      const startTime = processStartTime(pid);
      if (startTime === undefined) return undefined;
      const resource: OwnedResource = { kind: 'process', pid, startTime, name: name.slice(0, 64) };
      append({ op: 'own', resource });
      return resource;
    },
    close: () => rmSync(path, { force: true }),
  };
}

export interface JournalEntry {
  path: string;
  owner: JournalOwner;
  /** Owned and not released, in the order they were recorded. */
  live: OwnedResource[];
  /** Lines that could not be trusted (a torn last line, a tampered record): ignored. */
  skipped: number;
}

/** Parses one journal; undefined if its first line is not a valid owner record. */
export function parseJournal(path: string, text: string): JournalEntry | undefined {
  const lines = text.split('\n').filter((l) => l.length > 0);
  let owner: JournalOwner | undefined;
  const live = new Map<string, OwnedResource>();
  let skipped = 0;
  for (const [i, line] of lines.entries()) {
    let parsed;
    try {
      parsed = JournalLineSchema.safeParse(JSON.parse(line));
    } catch {
      skipped++;
      continue;
    }
    if (!parsed.success) {
      skipped++;
      continue;
    }
    const v = parsed.data;
    if (v.op === 'run') {
      if (i === 0) owner = v;
      else skipped++;
    } else if (v.op === 'own') live.set(resourceKey(v.resource), v.resource);
    else live.delete(resourceKey(v.resource));
  }
  return owner ? { path, owner, live: [...live.values()], skipped } : undefined;
}

export async function readJournals(dir = defaultJournalDir()): Promise<JournalEntry[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.jsonl')).sort();
  const out: JournalEntry[] = [];
  for (const name of names) {
    const path = join(dir, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const entry = parseJournal(path, text);
    if (entry && `${entry.owner.runId}.jsonl` === name) out.push(entry);
  }
  return out;
}
