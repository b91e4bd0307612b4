import { createSocket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCapture } from './capture.js';
import type { Packet } from './packet.js';
import { addressFilter } from './packet-witness.js';

export interface HostLeakReport {
  /** Packets to or from a watched address seen on this machine's own interfaces: must be empty. */
  readonly leaks: readonly Packet[];
  readonly controlSeen: number;
}

export interface HostLeakWatch {
  readonly pid: number;
  readonly filter: string;
  /** Positive control: sends one UDP datagram to 127.0.0.1 and waits until the capture has seen that one. */
  proveLive(timeoutMs?: number): Promise<void>;
  stop(): Promise<HostLeakReport>;
}

/**
 * A passive capture in the harness's own network namespace (no promiscuous mode; it sends nothing except
 * its loopback control), showing that no packet of a run reached the machine's real interfaces.
 */
export async function startHostLeakWatch(addresses: readonly string[], options: { controlPort?: number } = {}): Promise<HostLeakWatch> {
  const controlPort = options.controlPort ?? 20_000 + Math.floor(Math.random() * 40_000);
  const filter = `(${addressFilter(addresses)}) or (host 127.0.0.1 and udp dst port ${controlPort})`;
  const isControl = (p: Packet): boolean => p.dst === '127.0.0.1' && p.dstPort === controlPort;
  const capture = await startCapture({ filter });

  const controlCount = (): number => capture.packets().filter(isControl).length;
  const proveLive = async (timeoutMs = 3000): Promise<void> => {
    const before = controlCount();
    const socket = createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.send('sandcheck-leak-watch-control', controlPort, '127.0.0.1', (err) => (err ? reject(err) : resolve()));
      });
    } finally {
      socket.close();
    }
    const deadline = Date.now() + timeoutMs;
    while (controlCount() <= before) {
      if (Date.now() > deadline) throw new Error(`host leak watch saw no control packet within ${timeoutMs} ms`);
      await sleep(20);
    }
  };

  return {
    pid: capture.pid,
    filter,
    proveLive,
    stop: async () => {
      const packets = await capture.stop();
      return { leaks: packets.filter((p) => !isControl(p)), controlSeen: packets.filter(isControl).length };
    },
  };
}
