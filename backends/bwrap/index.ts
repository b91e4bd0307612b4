import { formatIssues } from '../../core/config-issues.js';
import { SandcheckError } from '../../core/errors.js';
import type { Backend } from '../../model/backend-contract.js';
import { findBinary } from '../../core/find-binary.js';
import { withAppliedOptions } from '../shared/applied-options.js';
import { BwrapBackend, resolveRuntime } from './bwrap-backend.js';
import { detectCgroups } from './cgroups.js';
import { BwrapOptionsSchema, type BwrapOptions } from './options.js';

export { BwrapBackend, DEFAULT_STATE_DIR, ENV_MARKER, type BwrapRuntime } from './bwrap-backend.js';
export { BwrapOptionsSchema, DEFAULT_UNPRIVILEGED_UID, type BwrapOptions, type ResolvedBwrapOptions } from './options.js';
export { sweepStaleCgroups, type SweepOptions, type SweepReport } from './sweep.js';
export { bwrapArgs, commandArgv, BOX_WORK, type BoxPlan } from './argv.js';

/**
 * The bubblewrap backend. Options build deliberately weakened variants (see BwrapOptionsSchema); the
 * defaults are the hardened profile. Looks up the tools and the cgroup hierarchy once; `preflight()`
 * says whether boxes can really start here.
 */
export default async function createBwrapBackend(options: BwrapOptions = {}): Promise<Backend> {
  const parsed = BwrapOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new SandcheckError('CONFIG_INVALID', `invalid bwrap backend options\n${formatIssues(parsed.error, options, '--backend-config')}`);
  }
  const opts = parsed.data;
  const [bwrap, setpriv, nsenter, mkfs] = await Promise.all([findBinary('bwrap'), findBinary('setpriv'), findBinary('nsenter'), findBinary('mkfs.ext4')]);
  const cgroups = await detectCgroups(opts.cgroups.mode, opts.cgroups.v2Parent);
  return withAppliedOptions(new BwrapBackend(resolveRuntime(opts, { sh: '/bin/sh', bwrap, setpriv, nsenter, mkfs }, cgroups)), opts);
}

export { createBwrapBackend };
