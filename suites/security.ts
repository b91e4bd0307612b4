import type { SecurityProbe } from '../model/probe.js';
import { escapeProbes } from './escapes.js';
import { exposureProbes } from './exposure.js';
import { dnsExfil } from '../probes/dns-exfil/probe.js';
import { icmpPing } from '../probes/icmp-ping/probe.js';
import { metadataAltForms } from '../probes/metadata-alt-forms/probe.js';
import { metadataIpv4 } from '../probes/metadata-ipv4/probe.js';
import { metadataIpv6 } from '../probes/metadata-ipv6/probe.js';
import { publicEgressIpv4, publicEgressIpv6 } from '../probes/public-egress/probe.js';
import { udpEgress } from '../probes/udp-egress/probe.js';
import { downloadApiLinks } from '../probes/download-api-links/probe.js';
import { exportProbes } from '../probes/export-attack/probe.js';
import { lateralMovement } from '../probes/lateral-movement/probe.js';
import { daemonSocket } from '../probes/daemon-socket/probe.js';
import { decoyProcessEnviron } from '../probes/decoy-process-environ/probe.js';
import { cpuQuota } from '../probes/cpu-quota/probe.js';
import { diskFill } from '../probes/disk-fill/probe.js';
import { forkBomb } from '../probes/fork-bomb/probe.js';
import { hostileBytes } from '../probes/hostile-bytes/probe.js';
import { identitySetuid } from '../probes/identity-setuid/probe.js';
import { identityCapabilities, identityNoNewPrivs, identityUid } from '../probes/identity-uid/probe.js';
import { kernelIdentity } from '../probes/kernel-identity/probe.js';
import { postureCapabilities } from '../probes/posture-capabilities/probe.js';
import { postureDevices } from '../probes/posture-devices/probe.js';
import { postureMounts } from '../probes/posture-mounts/probe.js';
import { postureNamespaces } from '../probes/posture-namespaces/probe.js';
import { postureSeccomp } from '../probes/posture-seccomp/probe.js';
import { memoryBomb } from '../probes/memory-bomb/probe.js';
import { longLine, stderrFlood } from '../probes/output-flood/probe.js';
import { readOnlyInput } from '../probes/read-only-input/probe.js';
import { ptraceHostDecoy } from '../probes/ptrace-host-decoy/probe.js';
import { residue } from '../probes/residue/probe.js';
import { secretDecoyEnv } from '../probes/secret-decoy-env/probe.js';
import { secretDecoyFile } from '../probes/secret-decoy-file/probe.js';
import { stdoutFlood } from '../probes/stdout-flood/probe.js';
import { surviveTeardown } from '../probes/survive-teardown/probe.js';
import { wallClockSleep } from '../probes/wall-clock-sleep/probe.js';
import { wallClockSpin } from '../probes/wall-clock-spin/probe.js';

export const securitySuite: readonly SecurityProbe[] = [
  // files
  secretDecoyFile,
  daemonSocket,
  downloadApiLinks,
  readOnlyInput,
  postureMounts,
  postureDevices,
  ...exportProbes,
  // identity
  secretDecoyEnv,
  decoyProcessEnviron,
  ptraceHostDecoy,
  identityUid,
  identityCapabilities,
  identityNoNewPrivs,
  identitySetuid,
  postureNamespaces,
  postureSeccomp,
  postureCapabilities,
  kernelIdentity,
  // resources
  wallClockSpin,
  wallClockSleep,
  memoryBomb,
  cpuQuota,
  forkBomb,
  diskFill,
  stdoutFlood,
  stderrFlood,
  longLine,
  hostileBytes,
  // network (inside the run's lab only)
  metadataIpv4,
  metadataIpv6,
  metadataAltForms,
  publicEgressIpv4,
  publicEgressIpv6,
  udpEgress,
  icmpPing,
  dnsExfil,
  lateralMovement,
  // lifecycle
  surviveTeardown,
  residue,
  // exposure: decoys reachable where real secrets lie, shared kernel objects (issue 17)
  ...exposureProbes,
  // capability escapes tried for real against the run's decoys (issue 17)
  ...escapeProbes,
];
