import type { SecurityProbe } from '../model/probe.js';
import { agentSocket } from '../probes/agent-socket/probe.js';
import { abstractSocket } from '../probes/abstract-socket/probe.js';
import { hostCredentialPaths } from '../probes/host-credential-paths/probe.js';
import { hostSearch } from '../probes/host-search/probe.js';
import { ipcCovert } from '../probes/ipc-covert/probe.js';
import { keyringDecoy } from '../probes/keyring-decoy/probe.js';

/** Exposure probes (issue 17): decoys any box could read where it reaches them, and shared kernel objects. */
export const exposureProbes: readonly SecurityProbe[] = [hostSearch, hostCredentialPaths, agentSocket, keyringDecoy, abstractSocket, ipcCovert];
