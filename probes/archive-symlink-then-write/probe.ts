import { exportProbe } from '../_shared/export-attack.js';

export const archiveSymlinkThenWrite = exportProbe(
  'archive-symlink-then-write',
  'tar with a link entry, then a file written through it',
  'archive-symlink-then-write',
  ['result.tar'],
  'a tar that writes through its own link entry',
);
