import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rmdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorMessage } from '../../core/errors.js';
import { ExportError } from './errors.js';
import type { ExportedFile } from '../../model/export-types.js';

export interface FileToWrite {
  /** Normalised, relative, already checked to stay inside the root. */
  path: string;
  content: Uint8Array;
}

function errnoOf(err: unknown): string {
  return err instanceof Error && 'code' in err ? String(err.code) : '';
}

/** Creates destDir if needed and returns its real path; everything below it is then created by us. */
async function prepareRoot(destDir: string): Promise<string> {
  try {
    await mkdir(destDir, { recursive: true });
    const root = await realpath(destDir);
    if (!(await lstat(root)).isDirectory()) throw new Error('not a directory');
    return root;
  } catch (err) {
    throw new ExportError('EXPORT_DEST_INVALID', `export directory ${destDir} is unusable: ${errorMessage(err)}`, { path: destDir, cause: err });
  }
}

class Journal {
  readonly files: string[] = [];
  readonly dirs: string[] = [];
  async rollback(): Promise<void> {
    for (const f of this.files.reverse()) await unlink(f).catch(() => undefined);
    for (const d of this.dirs.reverse()) await rmdir(d).catch(() => undefined);
  }
}

/** mkdir one level at a time; an existing entry must be a real directory, never a symlink to follow. */
async function ensureDir(root: string, rel: string, journal: Journal): Promise<void> {
  let current = root;
  for (const seg of rel.split('/')) {
    current = join(current, seg);
    try {
      await mkdir(current, { mode: 0o755 });
      journal.dirs.push(current);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST')
        throw new ExportError('EXPORT_WRITE_FAILED', `cannot create ${current}: ${errorMessage(err)}`, { path: current, cause: err });
      const st = await lstat(current);
      if (st.isSymbolicLink() || !st.isDirectory()) {
        throw new ExportError(
          'EXPORT_DEST_UNSAFE',
          `${current} already exists as a ${st.isSymbolicLink() ? 'symbolic link' : 'non-directory'}; refusing to write through it`,
          { path: current },
        );
      }
    }
  }
}

async function writeOne(root: string, file: FileToWrite, mode: number, journal: Journal): Promise<ExportedFile> {
  const full = join(root, file.path);
  const parent = dirname(file.path);
  if (parent !== '.') await ensureDir(root, parent, journal);
  let handle;
  try {
    handle = await open(full, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EEXIST') {
      const st = await lstat(full).catch(() => undefined);
      if (st?.isSymbolicLink()) throw new ExportError('EXPORT_DEST_UNSAFE', `${full} is a symbolic link; refusing to write through it`, { path: full });
      throw new ExportError('EXPORT_DEST_EXISTS', `${full} already exists; exports never overwrite`, { path: full });
    }
    if (code === 'ELOOP') throw new ExportError('EXPORT_DEST_UNSAFE', `${full} is a symbolic link; refusing to write through it`, { path: full });
    throw new ExportError('EXPORT_WRITE_FAILED', `cannot create ${full}: ${errorMessage(err)}`, { path: full, cause: err });
  }
  journal.files.push(full);
  try {
    await handle.writeFile(file.content);
  } catch (err) {
    throw new ExportError('EXPORT_WRITE_FAILED', `cannot write ${full}: ${errorMessage(err)}`, { path: full, cause: err });
  } finally {
    await handle.close();
  }
  // O_NOFOLLOW guards only the last component; confirm no directory above it was swapped for a link meanwhile.
  if ((await realpath(full)) !== full) throw new ExportError('EXPORT_DEST_UNSAFE', `${full} resolved elsewhere after writing`, { path: full });
  return { path: file.path, bytes: file.content.length, sha256: createHash('sha256').update(file.content).digest('hex') };
}

/**
 * Writes every file under destDir with O_CREAT|O_EXCL|O_NOFOLLOW, or none: on the first failure every
 * file and directory created so far is removed again and an ExportError is thrown.
 */
export async function writeAllOrNothing(destDir: string, files: readonly FileToWrite[], mode = 0o644): Promise<ExportedFile[]> {
  const root = await prepareRoot(destDir);
  const journal = new Journal();
  const written: ExportedFile[] = [];
  try {
    for (const file of files) written.push(await writeOne(root, file, mode, journal));
    return written;
  } catch (err) {
    await journal.rollback();
    if (err instanceof ExportError) throw err;
    throw new ExportError('EXPORT_WRITE_FAILED', `export failed: ${errorMessage(err)}`, { cause: err });
  }
}
