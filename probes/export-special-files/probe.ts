import { exportProbe } from '../_shared/export-attack.js';

export const exportSpecialFiles = exportProbe(
  'export-special-files',
  'a FIFO and a device node as artifacts',
  'special',
  ['pipe.txt', 'device.txt'],
  'a FIFO or device node',
);
