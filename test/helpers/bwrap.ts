import { findBinary } from '../../core/find-binary.js';

/** Why the real-bubblewrap tests cannot run here, or undefined when they can. */
export async function bwrapSkipReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `bubblewrap needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'needs root (setpriv to the box uid, cgroups, tmpfs workspaces, lab network namespaces)';
  if (!(await findBinary('bwrap'))) return 'bwrap is not installed (apt-get install -y bubblewrap)';
  if (!(await findBinary('setpriv'))) return 'setpriv is not installed (apt-get install -y util-linux)';
  return undefined;
}
