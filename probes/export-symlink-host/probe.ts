import { exportProbe, decoy } from '../_shared/export-attack.js';

export const exportSymlinkHost = exportProbe(
  'export-symlink-host',
  'artifact is a symlink to a host secret',
  'symlink-host',
  ['result.txt'],
  'a symlink to a host file',
  decoy,
);
