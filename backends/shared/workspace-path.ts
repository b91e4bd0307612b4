import { posix } from 'node:path';
import { SandcheckError } from '../../core/errors.js';

/** Normalised relative segments of a workspace path; refuses absolute paths, '..' and the workspace itself. */
export function segmentsOf(rel: string): string[] {
  const norm = posix.normalize(rel.replaceAll('\\', '/'));
  if (posix.isAbsolute(norm) || norm === '..' || norm.startsWith('../')) {
    throw new SandcheckError('HARNESS', `path "${rel}" leaves the workspace`);
  }
  const segs = norm.split('/').filter((s) => s !== '' && s !== '.');
  if (segs.length === 0) throw new SandcheckError('HARNESS', `path "${rel}" names the workspace itself`);
  return segs;
}
