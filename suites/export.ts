import type { SecurityProbe } from '../model/probe.js';
import { archiveAbsolute } from '../probes/archive-absolute/probe.js';
import { archiveDotdot } from '../probes/archive-dotdot/probe.js';
import { archiveSymlinkThenWrite } from '../probes/archive-symlink-then-write/probe.js';
import { exportHardlink } from '../probes/export-hardlink/probe.js';
import { exportHugeFile } from '../probes/export-huge-file/probe.js';
import { exportManySmall } from '../probes/export-many-small/probe.js';
import { exportSpecialFiles } from '../probes/export-special-files/probe.js';
import { exportSymlinkDir } from '../probes/export-symlink-dir/probe.js';
import { exportSymlinkHost } from '../probes/export-symlink-host/probe.js';
import { exportTypeSmuggling } from '../probes/export-type-smuggling/probe.js';
import { zipSlip } from '../probes/zip-slip/probe.js';

/** The export attacks, judged on the exporter in use (probes/_shared/export-attack.ts). */
export const exportProbes: readonly SecurityProbe[] = [
  exportSymlinkHost,
  exportSymlinkDir,
  exportHardlink,
  archiveDotdot,
  archiveAbsolute,
  archiveSymlinkThenWrite,
  zipSlip,
  exportManySmall,
  exportHugeFile,
  exportTypeSmuggling,
  exportSpecialFiles,
];
