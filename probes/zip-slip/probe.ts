import { exportProbe } from '../_shared/export-attack.js';

export const zipSlip = exportProbe('zip-slip', 'zip with ../../ entries (zip slip)', 'zip-slip', ['result.zip'], 'a zip whose entries climb out with ../');
