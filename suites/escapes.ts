import type { SecurityProbe } from '../model/probe.js';
import { escapeFileHandle } from '../probes/escape-file-handle/probe.js';
import { escapeKernelModule } from '../probes/escape-kernel-module/probe.js';
import { escapeMknodDisk } from '../probes/escape-mknod-disk/probe.js';
import { escapeMountHost } from '../probes/escape-mount-host/probe.js';
import { escapeProcRoot } from '../probes/escape-proc-root/probe.js';
import { escapeRawSocket } from '../probes/escape-raw-socket/probe.js';

/** Capability escapes tried for real against the run's decoys (issue 17). */
export const escapeProbes: readonly SecurityProbe[] = [escapeMountHost, escapeFileHandle, escapeProcRoot, escapeMknodDisk, escapeKernelModule, escapeRawSocket];
