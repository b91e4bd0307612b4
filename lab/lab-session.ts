import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type { LabHandle } from '../backends/contract.js';
import { CANARY_PREFIX, type Canary } from './canaries.js';
import { DEFAULT_DNS_ANSWERS, defaultLabServices, type LabConfigInput, type LabServiceConfig } from './decoys/lab-config.js';
import type { DecoyEvent } from './decoys/decoy-log.js';
import type { LabServerLine } from './decoys/lab-server.js';
import { createLabNamespace, type LabNamespace } from './netns/netns.js';
import { resolvConfFor } from './netns/enter.js';
import { startPacketWitness, type PacketWitness } from './netns/packet-witness.js';
import type { Packet } from './netns/packet.js';
import { probeLabSupport } from './netns/support.js';

const READY_TIMEOUT_MS = 15_000;
const MAX_EVENTS = 20_000;

/** What a run's lab saw, for one time window. */
export interface LabTraffic {
  events: DecoyEvent[];
  packets: Packet[];
}

export interface LabSession {
  handle: LabHandle;
  /** Decoy credentials served by the fake metadata service. */
  canaries: Canary[];
  /** Everything seen between two instants (ms since epoch). */
  trafficBetween(fromMs: number, toMs: number): LabTraffic;
  close(): Promise<{ events: number; packets: number; leftovers: string[] }>;
}

function labServerArgv(config: LabConfigInput, runId: string): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  // From source (tests, tsx) the server is TypeScript; from dist it is compiled JavaScript.
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = join(here, 'decoys', fromSource ? 'lab-server.ts' : 'lab-server.js');
  // The trailing marker names the run in the process list (the server ignores it).
  return [process.execPath, ...(fromSource ? ['--import', 'tsx'] : []), entry, JSON.stringify(config), `sandcheck-lab-${runId}`];
}

const metadataCanary = (kind: string): string => `${CANARY_PREFIX}${kind}${randomBytes(10).toString('hex')}`;

/**
 * The run's sealed outside world: its own network namespace with decoys on every address, the
 * decoy services inside it, and a packet witness. Nothing in it routes to a real network.
 */
export async function openLab(runId: string, cwd: string): Promise<LabSession> {
  const ns: LabNamespace = await createLabNamespace({ runId });
  let witness: PacketWitness | undefined;
  try {
    const resolvConfPath = await resolvConfFor(ns);
    const creds = {
      accessKeyId: metadataCanary('IMDSAKIA'),
      secretAccessKey: metadataCanary('IMDSSECRET'),
      token: metadataCanary('IMDSTOKEN'),
      imdsToken: metadataCanary('IMDSV2'),
    };
    // The resolver answers on every address (wildcard), so whatever resolv.conf a box has, its queries land here.
    const services: LabServiceConfig[] = defaultLabServices().filter((s) => s.kind !== 'dns');
    services.push({ kind: 'dns', host: '0.0.0.0', port: 53, answers: DEFAULT_DNS_ANSWERS }, { kind: 'dns', host: '::', port: 53, answers: DEFAULT_DNS_ANSWERS });
    const config: LabConfigInput = { canaries: creds, services, maxEvents: MAX_EVENTS };
    const events: DecoyEvent[] = [];
    const server = ns.spawn(labServerArgv(config, runId), { cwd, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', reject: false, buffer: false });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the lab decoy services did not start in time')), READY_TIMEOUT_MS);
      if (!server.stdout) return reject(new Error('no stdout from the lab server'));
      createInterface({ input: server.stdout }).on('line', (line) => {
        let msg: LabServerLine;
        try {
          msg = JSON.parse(line) as LabServerLine;
        } catch {
          return;
        }
        if (msg.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (msg.type === 'event' && events.length < MAX_EVENTS) events.push(msg.event);
        else if (msg.type === 'error') {
          clearTimeout(timer);
          reject(new Error(`lab decoy services failed: ${msg.code}: ${msg.message}`));
        }
      });
      void server.then((r) => {
        clearTimeout(timer);
        reject(new Error(`the lab server exited early (${r.exitCode ?? r.signal})`));
      });
    });
    await ready;
    witness = await startPacketWitness(ns);
    const w = witness;
    return {
      handle: { netnsPath: ns.path, resolvConfPath },
      canaries: Object.entries(creds).map(([k, value]) => ({ label: `metadata:${k}`, value })),
      trafficBetween(fromMs, toMs) {
        const inWindow = (t: number) => t >= fromMs && t <= toMs;
        return {
          events: events.filter((e) => inWindow(Date.parse(e.time))),
          packets: w.packets().filter((p) => inWindow(p.time)),
        };
      },
      async close() {
        const packets = await w.stop();
        server.stdin?.end();
        const report = await ns.destroy();
        return { events: events.length, packets: packets.length, leftovers: report.survivors.map((pid) => `process ${pid} still held the lab namespace`) };
      },
    };
  } catch (err) {
    await witness?.stop().catch(() => undefined);
    await ns.destroy().catch(() => undefined);
    throw err;
  }
}

export { probeLabSupport };
