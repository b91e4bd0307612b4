import { exportProbe, MiB } from '../_shared/export-attack.js';

export const exportManySmall = exportProbe(
  'export-many-small',
  'files under the per-file limit whose total passes the aggregate',
  'many-small',
  (ctx) => Array.from({ length: ctx.policy.exports.maxFiles }, (_, i) => `out/part-${String(i).padStart(2, '0')}.bin`),
  'more bytes in total than the aggregate export limit',
  (ctx) => ({ files: ctx.policy.exports.maxFiles, bytesEach: Math.ceil((ctx.policy.exports.maxTotalMb * MiB) / ctx.policy.exports.maxFiles) + 64 * 1024 }),
);
