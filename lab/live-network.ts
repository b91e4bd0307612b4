import { startCapture } from './netns/capture.js';
import { WITNESS_FILTER } from './netns/packet-witness.js';
import type { LabTraffic } from './lab-session.js';

export interface LiveNetworkWitness {
  trafficBetween(fromMs: number, toMs: number): LabTraffic;
  close(): Promise<void>;
}

/**
 * --live-network: no lab. Probes try the real addresses from wherever the backend puts its boxes,
 * and a packet witness on the machine's own interfaces records what left. Only for a disposable
 * cloud machine whose real metadata service and network the user means to test; never in our tests.
 */
export async function openLiveNetwork(): Promise<LiveNetworkWitness> {
  const capture = await startCapture({ filter: WITNESS_FILTER });
  return {
    trafficBetween: (fromMs, toMs) => ({ events: [], packets: capture.packets().filter((p) => p.time >= fromMs && p.time <= toMs) }),
    async close() {
      await capture.stop();
    },
  };
}
