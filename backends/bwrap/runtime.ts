import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tools } from './argv.js';
import type { CgroupDetection } from './cgroups.js';
import type { ResolvedBwrapOptions } from './options.js';

export const DEFAULT_STATE_DIR = '/run/sandcheck/bwrap';

/** Everything the factory found out about this host, fixed for the backend's life. */
export interface BwrapRuntime {
  opts: ResolvedBwrapOptions;
  tools: Tools;
  cgroups: CgroupDetection;
  isRoot: boolean;
  /** Host uid the box runs as after setpriv; undefined = the harness's own uid. */
  dropToUid: number | undefined;
  workspace: 'disk-image' | 'tmpfs' | 'host-dir';
  stateDir: string;
}

export function resolveRuntime(opts: ResolvedBwrapOptions, tools: Tools, cgroups: CgroupDetection): BwrapRuntime {
  const uid = process.getuid?.() ?? -1;
  const isRoot = uid === 0;
  return {
    opts,
    tools,
    cgroups,
    isRoot,
    dropToUid: opts.unprivilegedUid === null ? undefined : opts.unprivilegedUid,
    // A disk image needs mkfs.ext4 and loop devices (often absent inside containers); else the sized tmpfs.
    workspace: opts.workspace ?? (isRoot ? (tools.mkfs && existsSync('/dev/loop-control') ? 'disk-image' : 'tmpfs') : 'host-dir'),
    stateDir: opts.stateDir ?? (isRoot ? DEFAULT_STATE_DIR : join(tmpdir(), `sandcheck-bwrap-${uid}`)),
  };
}
