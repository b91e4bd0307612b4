import { lstat, mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SandcheckError, errorMessage } from '../harness/errors.js';

function code(err: unknown): string | undefined {
  return err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/**
 * `--out` is checked before anything starts: a writable directory (created, with a notice, if it is missing).
 * A file, a read-only place or a path that cannot be created is an OUT_DIR_UNUSABLE error (exit 3).
 */
export async function prepareOutDir(dir: string, notice?: (message: string) => void): Promise<void> {
  const unusable = (why: string, hint: string, cause?: unknown): SandcheckError =>
    new SandcheckError('OUT_DIR_UNUSABLE', `--out ${dir}: ${why}`, { hint, ...(cause !== undefined ? { cause } : {}) });
  let exists = true;
  try {
    await lstat(dir);
  } catch (err) {
    if (code(err) !== 'ENOENT') throw unusable(`cannot be inspected (${errorMessage(err)})`, 'give a directory you can write to', err);
    exists = false;
  }
  if (!exists) {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw unusable(`cannot be created (${errorMessage(err)})`, 'give a directory you can write to, or create it first', err);
    }
    notice?.(`created the output directory ${dir}`);
  }
  // A symlink to a directory is fine: follow it for the kind.
  const st = await stat(dir).catch((err: unknown) => {
    throw unusable(`cannot be inspected (${errorMessage(err)})`, 'give a directory you can write to', err);
  });
  if (!st.isDirectory()) throw unusable('is not a directory', 'give a directory (it is created if missing), e.g. --out out/');
  const probe = join(dir, `.sandcheck-write-check-${process.pid}`);
  try {
    await writeFile(probe, '', { flag: 'wx' });
    await unlink(probe);
  } catch (err) {
    throw unusable(`is not writable (${code(err) ?? errorMessage(err)})`, 'give a directory you can write to (check its permissions and whether the file system is read-only)', err);
  }
}
