import { tmpdir } from 'node:os';
import { fsLocation, hostCannotOpen, hostLoadsModules, onBlockDevice } from '../../probes/_shared/escapes-host.js';

/** Escape probes this host itself cannot offer a box (not-applicable anywhere here): no module support, decoys off a block device, a disk closed even to root. */
export function hostUntestableEscapes(): Set<string> {
  const decoyFs = fsLocation(tmpdir());
  return new Set([
    ...(hostLoadsModules() ? [] : ['escape-kernel-module']),
    ...(onBlockDevice(decoyFs) ? [] : ['escape-mount-host']),
    ...(onBlockDevice(decoyFs) && decoyFs && hostCannotOpen(decoyFs) === undefined ? [] : ['escape-mknod-disk']),
  ]);
}
