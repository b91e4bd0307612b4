import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { SandcheckError, errorMessage } from './errors.js';
import { visibleLine } from './clean-text.js';

function codeOf(err: unknown): string | undefined {
  return err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The caller's effective uid, or undefined where the platform has none. */
const euid = (): number | undefined => process.geteuid?.();

/**
 * A report file as a whole or not at all: written to a new temp file beside it (O_EXCL | O_NOFOLLOW, so never
 * through a planted link), flushed to disk, then renamed over the target. An existing target must be a regular
 * file of the caller's; a full disk leaves the old file (or none) and says how to recover.
 */
export async function writeReportFile(path: string, data: string | Uint8Array): Promise<void> {
  const shown = visibleLine(path);
  const parent = await lstat(dirname(path)).catch(() => undefined);
  if (parent?.isSymbolicLink())
    throw new SandcheckError('OUT_DIR_UNUSABLE', `${visibleLine(dirname(path))} is a symlink: reports are never written through one`, {
      hint: 'remove it, or give another --out',
    });
  const existing = await lstat(path).catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT') return undefined;
    throw new SandcheckError('OUT_DIR_UNUSABLE', `${shown}: cannot be inspected (${codeOf(err) ?? errorMessage(err)})`);
  });
  if (existing) {
    if (!existing.isFile())
      throw new SandcheckError(
        'OUT_DIR_UNUSABLE',
        `${shown}: is not a regular file (${existing.isSymbolicLink() ? 'a symlink' : 'a special file'}): a report is never written over it`,
        { hint: 'remove it, or give another --out' },
      );
    const me = euid();
    if (me !== undefined && existing.uid !== me)
      throw new SandcheckError('OUT_DIR_UNUSABLE', `${shown}: belongs to uid ${existing.uid}, not to you: a report is never written over it`, {
        hint: 'give an --out directory of your own',
      });
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let handle;
  try {
    handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, path);
  } catch (err) {
    await handle?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    if (err instanceof SandcheckError) throw err;
    const code = codeOf(err);
    if (code === 'ENOSPC' || code === 'EDQUOT') throw new ReportWriteError(path, code);
    throw new SandcheckError('OUT_DIR_UNUSABLE', `${shown}: cannot be written (${code ?? errorMessage(err)})`, { cause: err });
  }
}

/** The disk filled up (or a quota was reached) while a report was written. */
export class ReportWriteError extends SandcheckError {
  constructor(path: string, code: string) {
    super('REPORT_WRITE_FAILED', `${visibleLine(path)}: no space left to write the report (${code}); what was measured is kept in the run journal next to it`, {
      hint: `free some space, then rebuild the cards with: sandcheck report --recover ${visibleLine(dirname(path))}`,
    });
  }
}
