import { exportProbe } from '../_shared/export-attack.js';

export const archiveDotdot = exportProbe(
  'archive-dotdot',
  'tar with ../../ entries',
  'archive-dotdot',
  ['result.tar'],
  'a tar whose entries climb out with ../',
);
