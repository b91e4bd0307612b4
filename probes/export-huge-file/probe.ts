import { exportProbe, MiB } from '../_shared/export-attack.js';

export const exportHugeFile = exportProbe(
  'export-huge-file',
  'one file past the per-file limit',
  'huge-file',
  ['result.bin'],
  'a file larger than the per-file limit',
  (ctx) => ({
    bytes: Math.ceil(ctx.policy.exports.maxFileMb * MiB) + MiB,
  }),
);
