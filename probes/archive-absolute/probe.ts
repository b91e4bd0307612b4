import { exportProbe } from '../_shared/export-attack.js';

export const archiveAbsolute = exportProbe(
  'archive-absolute',
  'tar with an absolute entry',
  'archive-absolute',
  ['result.tar'],
  'a tar with an absolute entry',
);
