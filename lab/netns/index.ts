export { DECOY_ADDRESSES, LAB_RESOLVER, type DecoyAddress } from './addresses.js';
export { nsenterArgv, resolvConfFor, type NetnsRef } from './enter.js';
export { LabError, isLabError, type LabErrorCode } from './errors.js';
export {
  createLabNamespace,
  labNameFor,
  randomRunId,
  validateRunId,
  LAB_NAME_PATTERN,
  type CreateLabOptions,
  type LabDestroyReport,
  type LabNamespace,
  type LabSubprocess,
} from './netns.js';
export { PacketSchema, parseTcpdumpLine, type Packet, type PacketProto } from './packet.js';
export { WITNESS_FILTER, addressFilter, startPacketWitness, type PacketWitness, type WitnessOptions } from './packet-witness.js';
export { startHostLeakWatch, type HostLeakReport, type HostLeakWatch } from './host-leak-watch.js';
export { startCapture, type Capture, type CaptureOptions, type CaptureStats } from './capture.js';
export { LAB_STATE_DIR } from './state.js';
export { assertLabSupport, probeLabSupport, type LabSupport } from './support.js';
export { sweepStaleLabs, type SweepReport } from './sweep.js';
