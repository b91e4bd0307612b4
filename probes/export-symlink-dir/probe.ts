import { exportProbe, decoy } from '../_shared/export-attack.js';

export const exportSymlinkDir = exportProbe(
  'export-symlink-dir',
  'artifact inside a symlinked directory pointing at the host',
  'symlink-dir',
  ['out/.aws/credentials'],
  'a file reached through a symlinked directory',
  decoy,
);
