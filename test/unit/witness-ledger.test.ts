import { describe, expect, it } from 'vitest';
import { BoundedRing } from '../../lab/bounded-ring.js';
import { parseStatsLine } from '../../lab/netns/capture.js';
import { tcpListenDrops, udpDrops } from '../../lab/netns/socket-drops.js';
import { witnessBlindness } from '../../lab/witness-health.js';
import { WitnessLedger } from '../../lab/witness-ledger.js';

describe('witness counters', () => {
  it("reads tcpdump's SIGUSR1 statistics line, with and without interface drops", () => {
    expect(parseStatsLine('tcpdump: 1 packet captured, 2 packets received by filter, 0 packets dropped by kernel')).toEqual({
      captured: 1,
      receivedByFilter: 2,
      droppedByKernel: 0,
      droppedByInterface: 0,
    });
    expect(
      parseStatsLine('tcpdump: 9 packets captured, 12 packets received by filter, 3 packets dropped by kernel, 4 packets dropped by interface'),
    ).toMatchObject({
      droppedByKernel: 3,
      droppedByInterface: 4,
    });
    expect(parseStatsLine('listening on any, link-type LINUX_SLL2')).toBeUndefined();
  });

  it('sums the drops of the decoy sockets only, and the namespace listen drops', () => {
    const udp = [
      '   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops',
      '  101: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 7',
      '  102: 00000000:007B 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 9999 2 0000000000000000 50',
    ].join('\n');
    expect(udpDrops(udp, new Set(['4242']))).toBe(7);
    expect(udpDrops(udp, new Set())).toBe(0);
    const netstat = 'TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 2 5\nIpExt: InNoRoutes\nIpExt: 0\n';
    expect(tcpListenDrops(netstat)).toBe(5);
  });
});

describe('BoundedRing', () => {
  it('keeps the newest records and says up to when it threw records away', () => {
    const ring = new BoundedRing<number>(10, 1_000_000);
    for (let t = 1; t <= 25; t += 1) ring.push(t, t, 1);
    expect(ring.size).toBeLessThanOrEqual(10);
    expect(ring.between(0, 100).at(-1)).toBe(25);
    expect(ring.lastEvictedMs).toBeGreaterThanOrEqual(15);
    expect(ring.evicted + ring.size).toBe(25);
  });

  it('is bounded by bytes as well as by count', () => {
    const ring = new BoundedRing<string>(1000, 100);
    for (let t = 1; t <= 50; t += 1) ring.push('x'.repeat(10), t, 10);
    expect(ring.size).toBeLessThanOrEqual(10);
    expect(ring.lastEvictedMs).toBeDefined();
  });
});

describe('WitnessLedger', () => {
  it('a window sees only when a proof inside it succeeded, no counter grew and no store overflowed in it', () => {
    const ledger = new WitnessLedger('lab');
    ledger.sample(100, 0);
    ledger.proof({ marker: 'a', sentMs: 1000, doneMs: 1010, ok: true, notes: [] });
    ledger.sample(1010, 0);
    const healthy = ledger.health(900, 1100, [{ store: 'decoy log', ms: undefined }]);
    expect(healthy).toEqual({ saturated: false, dropped: 0, proofOfLife: true, scope: 'lab', notes: [] });
    expect(witnessBlindness(healthy)).toBeUndefined();

    // No proof in the window.
    expect(ledger.health(1020, 1100, []).proofOfLife).toBe(false);
    // Evicted records from inside the window.
    expect(ledger.health(900, 1100, [{ store: 'decoy log', ms: 950 }]).saturated).toBe(true);
    // An eviction before the window does not touch it.
    expect(ledger.health(900, 1100, [{ store: 'decoy log', ms: 800 }]).saturated).toBe(false);

    ledger.proof({ marker: 'b', sentMs: 2000, doneMs: 2010, ok: true, notes: [] });
    ledger.sample(2010, 12);
    const lossy = ledger.health(1500, 2100, []);
    expect(lossy.dropped).toBe(12);
    expect(witnessBlindness(lossy)).toMatch(/12 packets/);

    ledger.proof({ marker: 'c', sentMs: 3000, doneMs: 3010, ok: false, notes: ['the packet capture did not record the proof query'] });
    ledger.sample(3010, 12);
    const dead = ledger.health(2500, 3100, []);
    expect(dead).toMatchObject({ proofOfLife: false, dropped: 0 });
    expect(witnessBlindness(dead)).toMatch(/packet capture did not record/);
  });
});
