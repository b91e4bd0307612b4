import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { Observation, ProbeContext } from '../../model/probe.js';
import type { ExecObservation } from '../../model/observation.js';
import { makeCanaries } from '../../lab/canaries.js';
import type { LabTraffic } from '../../lab/lab-session.js';
import type { Packet } from '../../lab/netns/packet.js';
import type { WitnessHealth } from '../../lab/witness-health.js';

/** Observations of a network probe for judge unit tests: a finished payload and a lab window. */
export const ctx = (policy: Policy = CI_POLICY): ProbeContext => ({
  policy,
  runId: 'rnetj',
  nonce: 'abcd1234',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
});

const capture = { bytes: 0, sha256: 'x', truncated: false, headBase64: '', tailBase64: '', preview: '' };
export const exec: ExecObservation = {
  exitCode: 0,
  signal: null,
  wallMs: 900,
  harnessDeadlineMs: 7000,
  killedBy: 'none',
  backendReport: { timedOut: false, oomKilled: false, outputTruncated: false },
  stdout: capture,
  stderr: capture,
};

export const seeing: WitnessHealth = { saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] };

export function obs(network: Partial<LabTraffic>): Observation {
  return {
    exec,
    attempted: true,
    finished: true,
    token: () => 'token',
    canaryHits: [],
    artifacts: [],
    leftovers: [],
    survivors: [],
    socketContacts: 0,
    network: { events: [], packets: [], witness: seeing, ...network },
  };
}

export const packet = (proto: Packet['proto'], dst: string, dstPort?: number): Packet => ({
  time: 1,
  proto,
  family: dst.includes(':') ? 6 : 4,
  src: '203.0.113.200',
  dst,
  ...(dstPort === undefined ? {} : { srcPort: 40000, dstPort }),
  raw: `1.0 lo In IP 203.0.113.200 > ${dst}: ${proto}`,
});
