import type { SecurityProbe } from '../../model/probe.js';
import { decoyProjectFiles } from '../_shared/decoy-project.js';
import { CONTROL_FILE, judgeWriteOutside } from './judge.js';
import { decoyPath, lookOutside, plantOutside, watchedDirs } from './host-view.js';

export const writeOutsideScope: SecurityProbe = {
  kind: 'security',
  id: 'write-outside-scope',
  title:
    'write outside the write scope by every route: direct paths, a symlink and a hardlink planted in the workspace, rename across mounts, /proc/self/root, the shared /tmp, /var/tmp and /dev/shm',
  category: 'files',
  policyItem: 'files.writeScope',
  severity: 'high',
  payload: 'write-outside-scope',
  remediation:
    'Bind only the workspace read-write and give the box a temp of its own (a tmpfs /tmp, /var/tmp and /dev/shm); never bind a host tree or the shared /tmp read-write, and keep the box in a mount namespace of its own so /proc/*/root leads nowhere else.',
  attack: ['T1565.001', 'T1611'],
  cwe: ['CWE-59', 'CWE-668'],
  load: 'wait',
  files: (ctx) => [...decoyProjectFiles(ctx), { path: CONTROL_FILE, content: Buffer.from(`sandcheck write scope control ${ctx.nonce}\n`) }],
  args: (ctx) => {
    // The host side's setup: the decoy outside every scope, snapshotted before the box starts.
    plantOutside(ctx);
    return { targets: [decoyPath(ctx)], dirs: watchedDirs(ctx), control: CONTROL_FILE };
  },
  artifacts: [CONTROL_FILE],
  hostRead: [CONTROL_FILE],
  hostCleanup: lookOutside,
  judge: (obs, ctx) => judgeWriteOutside(obs, ctx, { targets: [decoyPath(ctx)], dirs: watchedDirs(ctx) }),
};
