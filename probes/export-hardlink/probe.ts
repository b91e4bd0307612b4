import { exportProbe, decoy } from '../_shared/export-attack.js';

export const exportHardlink = exportProbe(
  'export-hardlink',
  'artifact is a hardlink (to a host file where possible)',
  'hardlink',
  ['result.txt'],
  'a hardlinked file',
  decoy,
);
