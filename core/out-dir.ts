import { lstat, mkdir, statfs, unlink, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { SandcheckError, errorMessage } from './errors.js';
import { visibleLine } from './clean-text.js';

function code(err: unknown): string | undefined {
  return err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The files a run may write straight into `--out`: each must be absent or a regular file of the caller's. */
export const OUT_FILES = ['security.json', 'task.json', 'security.junit.xml', 'task.junit.xml', 'security.sarif', 'report.html', 'run-journal.jsonl'] as const;

/** Every prefix of the path as written: `a/b/c` → a, a/b, a/b/c; `/x/y` → /x, /x/y. */
function prefixes(dir: string): string[] {
  const parts = normalize(dir)
    .split(sep)
    .filter((p) => p.length > 0 && p !== '.');
  const out: string[] = [];
  let cur = isAbsolute(dir) ? sep : '';
  for (const part of parts) {
    cur = cur === '' ? part : cur.endsWith(sep) ? `${cur}${part}` : `${cur}${sep}${part}`;
    out.push(cur);
  }
  return out;
}

export interface OutDirCheck {
  dir: string;
  /** The directory does not exist yet: `createOutDir` makes it. */
  missing: boolean;
}

/**
 * `--out` checked before anything starts, without creating anything: no symlink at any level of the path as
 * written (a report is never written through one), an existing directory of the caller's, report files in it that
 * are regular files of the caller's, and room for what the run can write (`needBytes`).
 */
export async function checkOutDir(dir: string, needBytes = 0): Promise<OutDirCheck> {
  const shown = visibleLine(dir);
  const unusable = (why: string, hint: string, cause?: unknown): SandcheckError =>
    new SandcheckError('OUT_DIR_UNUSABLE', `--out ${shown}: ${why}`, { hint, ...(cause !== undefined ? { cause } : {}) });
  if (dir.length === 0 || dir.includes('\u0000')) throw unusable('is not a path', 'give a directory, e.g. --out out/');
  const me = process.geteuid?.();
  let missing = false;
  let existing = '.';
  for (const p of prefixes(dir)) {
    let st;
    try {
      st = await lstat(p);
    } catch (err) {
      if (code(err) === 'ENOENT') {
        missing = true;
        break;
      }
      throw unusable(`${visibleLine(p)} cannot be inspected (${code(err) ?? errorMessage(err)})`, 'give a directory you can write to', err);
    }
    if (st.isSymbolicLink())
      throw unusable(`${visibleLine(p)} is a symlink: reports are never written through one`, 'give the real directory the link points to, or another --out');
    if (!st.isDirectory())
      throw unusable(
        p === normalize(dir).replace(/\/$/, '') ? 'is not a directory' : `${visibleLine(p)} is not a directory`,
        'give a directory (it is created if missing), e.g. --out out/',
      );
    existing = p;
  }
  if (!missing) {
    for (const name of OUT_FILES) {
      const f = await lstat(join(dir, name)).catch(() => undefined);
      if (f === undefined) continue;
      if (!f.isFile())
        throw unusable(
          `${name} is ${f.isSymbolicLink() ? 'a symlink' : 'not a regular file'}: a report is never written over it`,
          'remove it, or give another --out',
        );
      if (me !== undefined && f.uid !== me)
        throw unusable(`${name} belongs to uid ${f.uid}: a report is never written over a file that is not yours`, 'remove it, or give another --out');
    }
  }
  if (needBytes > 0) {
    const fs = await statfs(existing).catch(() => undefined);
    const free = fs ? fs.bavail * fs.bsize : undefined;
    if (free !== undefined && free < needBytes) {
      const mb = (n: number): string => `${Math.ceil(n / (1024 * 1024))} MB`;
      throw unusable(
        `has ${mb(free)} free, and this run can write up to ${mb(needBytes)} (reports and the artifacts of the task cases)`,
        'free some space, or give an --out on a disk with more room',
      );
    }
  }
  return { dir, missing };
}

/** Creates a checked `--out` if it was missing (with a notice), and checks that a file can be made in it. */
export async function createOutDir(checked: OutDirCheck, notice?: (message: string) => void): Promise<void> {
  const { dir } = checked;
  const unusable = (why: string, hint: string, cause?: unknown): SandcheckError =>
    new SandcheckError('OUT_DIR_UNUSABLE', `--out ${visibleLine(dir)}: ${why}`, { hint, ...(cause !== undefined ? { cause } : {}) });
  if (checked.missing) {
    try {
      await mkdir(dir, { recursive: true, mode: 0o755 });
    } catch (err) {
      throw unusable(`cannot be created (${code(err) ?? errorMessage(err)})`, 'give a directory you can write to, or create it first', err);
    }
    notice?.(`created the output directory ${visibleLine(dir)}`);
  }
  // Made in the meantime by someone else: the same rules again.
  await checkOutDir(dir);
  const probe = join(dir, `.sandcheck-write-check-${process.pid}`);
  try {
    await writeFile(probe, '', { flag: 'wx' });
    await unlink(probe);
  } catch (err) {
    throw unusable(
      `is not writable (${code(err) ?? errorMessage(err)})`,
      'give a directory you can write to (check its permissions and whether the file system is read-only)',
      err,
    );
  }
}

/** Both steps at once, for commands that have nothing else to check first. */
export async function prepareOutDir(dir: string, notice?: (message: string) => void, needBytes = 0): Promise<void> {
  await createOutDir(await checkOutDir(dir, needBytes), notice);
}
