import { readFile, readlink } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';
import { openLiveNetwork } from '../../lab/live-network.js';
import { processesInNetns } from '../../lab/netns/proc.js';
import { nsenterArgv } from '../../lab/netns/enter.js';
import { probeLabSupport, randomRunId } from '../../lab/netns/index.js';

const support = await probeLabSupport();
const skipReason = support.available ? '' : ` (skipped: no lab here: ${support.reason}; ${support.hint})`;

/** A decoy-shaped value the harness holds in its environment: the lab's services must not inherit it. */
const HARNESS_SECRET = `SCNRYWITNESSENV${Date.now()}`;

async function environOf(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean);
}

async function labProcesses(lab: LabSession): Promise<{ pid: number; comm: string }[]> {
  const inode = statSync(lab.handle.netnsPath).ino;
  const procs = await processesInNetns(inode);
  return Promise.all(procs.map(async (p) => ({ pid: p.pid, comm: (await readFile(`/proc/${p.pid}/comm`, 'utf8')).trim() })));
}

/** `count` UDP datagrams from inside the lab to a canary catch-all, then exit. */
async function flood(lab: LabSession, count: number): Promise<void> {
  const script = `import socket\ns=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor i in range(${count}):\n    s.sendto(b"flood %d" % i, ("203.0.113.10", 9))\n`;
  const [file, ...args] = nsenterArgv({ name: 'lab', path: lab.handle.netnsPath }, ['python3', '-c', script]);
  await execa(file ?? 'nsenter', args, { timeout: 30_000 });
}

describe.skipIf(!support.available)(`lab witnesses: proof of life, saturation, minimal environment${skipReason}`, () => {
  let lab: LabSession | undefined;

  beforeAll(async () => {
    process.env['SANDCHECK_WITNESS_TEST_SECRET'] = HARNESS_SECRET;
    try {
      lab = await openLab(randomRunId(), packageRoot(), { maxEvents: 300, maxPackets: 300 });
    } finally {
      delete process.env['SANDCHECK_WITNESS_TEST_SECRET'];
    }
  });

  afterAll(async () => {
    await lab?.close();
  });

  it("starts the decoy server and tcpdump with PATH only, never the harness's environment", async () => {
    if (!lab) throw new Error('no lab');
    const procs = await labProcesses(lab);
    const names = procs.map((p) => p.comm);
    expect(names).toContain('tcpdump');
    expect(names.some((n) => n === 'node' || n.startsWith('node'))).toBe(true);
    for (const p of procs) {
      const env = await environOf(p.pid);
      expect(
        env.map((kv) => kv.split('=')[0]),
        `${p.comm} (${p.pid})`,
      ).toEqual(['PATH']);
      expect(env.join('\n')).not.toContain(HARNESS_SECRET);
    }
  });

  it('proves the witnesses alive with a marked query both saw, and hides that traffic from the window', async () => {
    if (!lab) throw new Error('no lab');
    const before = Date.now();
    await sleep(20);
    const unproved = await lab.trafficBetween(before, Date.now());
    expect(unproved.witness.proofOfLife).toBe(false);
    expect(unproved.witness.notes.join(' ')).toMatch(/no proof of life/);

    const from = Date.now();
    const proof = await lab.proveWitness();
    expect(proof.ok, proof.notes.join('; ')).toBe(true);
    const traffic = await lab.trafficBetween(from, Date.now());
    expect(traffic.witness).toMatchObject({ proofOfLife: true, saturated: false, dropped: 0, scope: 'lab' });
    const marker = proof.marker;
    expect(traffic.events.some((e) => (e.dnsNames ?? []).includes(marker))).toBe(false);
    expect(traffic.packets.some((p) => p.raw.includes(marker) || p.srcPort === 53)).toBe(false);
  });

  it('counts what reached a decoy before the read even when the decoys log it later (a box that sends, then exits)', async () => {
    if (!lab) throw new Error('no lab');
    const server = (await labProcesses(lab)).find((p) => p.comm.startsWith('node'));
    if (server === undefined) throw new Error("no lab server among the lab's processes");
    const pid = server.pid;
    for (let round = 0; round < 5; round++) {
      // A tag of its own per round: a window opening in the millisecond the last one's events were stamped sees them too.
      const tag = `late${Date.now() % 1e12}r${round}`;
      // A datagram, a burst of 200 (a socket yields 32 a turn), a raw stream, a request relayed by the front to a
      // canary, and one to the metadata decoy.
      const script = [
        'import socket',
        `u=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b"udp-${tag}", ("198.51.100.10", 123))`,
        `for i in range(200): u.sendto(b"burst%03d-${tag}" % i, ("198.51.100.10", 9))`,
        'u.close()',
        `t=socket.create_connection(("203.0.113.10", 8080), timeout=5); t.sendall(b"tcp-${tag}"); t.close()`,
        `f=socket.create_connection(("198.51.100.80", 3128), timeout=5); f.sendall(b"GET http://203.0.113.10:8080/front-${tag} HTTP/1.1\\r\\nHost: 203.0.113.10:8080\\r\\n\\r\\n"); f.close()`,
        `m=socket.create_connection(("169.254.169.254", 80), timeout=5); m.sendall(b"GET /md-${tag} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"); m.close()`,
      ].join('\n');
      const [file, ...args] = nsenterArgv({ name: 'lab', path: lab.handle.netnsPath }, ['python3', '-c', script]);
      const from = Date.now();
      // Only this test's own lab server, by pid: stopped, it cannot log what its sockets receive until it resumes.
      process.kill(pid, 'SIGSTOP');
      try {
        await execa(file ?? 'nsenter', args, { timeout: 30_000 });
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      const seen = (await lab.trafficBetween(from)).events.map((e) => `${e.service} ${e.summary}`);
      const want = [
        `catch-all-udp UDP ${`udp-${tag}`.length} bytes: udp-${tag}`,
        `catch-all-udp UDP ${`burst199-${tag}`.length} bytes: burst199-${tag}`,
        `catch-all-tcp TCP ${`tcp-${tag}`.length} bytes: tcp-${tag}`,
        `canary-http GET http://203.0.113.10:8080/front-${tag}`,
        'front front absolute-uri 203.0.113.10:8080',
        `metadata GET /md-${tag}`,
      ];
      expect(
        want.filter((w) => !seen.includes(w)),
        `round ${round}: ${seen.filter((s) => !s.includes('burst')).join(' | ')}`,
      ).toEqual([]);
      expect(seen.filter((s) => s.startsWith('catch-all-udp UDP') && s.includes(': burst') && s.endsWith(`-${tag}`)).length, `round ${round}`).toBe(200);
    }
  });

  it('a flood past the bounds marks its own window saturated; the next window sees again', async () => {
    if (!lab) throw new Error('no lab');
    const from = Date.now();
    await flood(lab, 1200);
    await sleep(300);
    await lab.proveWitness();
    const flooded = await lab.trafficBetween(from, Date.now());
    // The flood blinds its own window one way or the other: records past the bounds, or packets the kernel dropped.
    expect(flooded.witness.saturated || flooded.witness.dropped > 0, JSON.stringify(flooded.witness)).toBe(true);
    expect(flooded.witness.notes.join(' ')).toMatch(/decoy log was full|packet capture was full|packets lost/);

    await sleep(50);
    const next = Date.now();
    const proof = await lab.proveWitness();
    expect(proof.ok, proof.notes.join('; ')).toBe(true);
    expect((await lab.trafficBetween(next, Date.now())).witness).toMatchObject({ saturated: false, dropped: 0, proofOfLife: true });
  });

  it('a dead packet witness gives no proof of life', async () => {
    if (!lab) throw new Error('no lab');
    const tcpdump = (await labProcesses(lab)).find((p) => p.comm === 'tcpdump');
    expect(tcpdump).toBeDefined();
    // Only the tcpdump this test's own lab started, by pid (checked to be in that lab's namespace above).
    expect(await readlink(`/proc/${tcpdump?.pid}/ns/net`)).toBe(`net:[${statSync(lab.handle.netnsPath).ino}]`);
    process.kill(tcpdump?.pid ?? -1, 'SIGKILL');
    await sleep(100);
    const from = Date.now();
    const proof = await lab.proveWitness();
    expect(proof.ok).toBe(false);
    expect(proof.notes.join('; ')).toMatch(/packet capture did not record|pcap statistics/);
    expect((await lab.trafficBetween(from, Date.now())).witness.proofOfLife).toBe(false);
  });
});

describe.skipIf(!support.available)(`the --live-network packet witness proves itself with loopback only${skipReason}`, () => {
  it('sees its own marked datagram to 127.0.0.1, reads pcap drops, and hides the proof from the window', async () => {
    // A passive capture on this machine's interfaces; the only packet sent is the loopback proof.
    const live = await openLiveNetwork();
    try {
      const from = Date.now();
      const proof = await live.proveWitness();
      expect(proof.ok, proof.notes.join('; ')).toBe(true);
      const traffic = live.trafficBetween(from, Date.now());
      expect(traffic.witness).toMatchObject({ proofOfLife: true, scope: 'live' });
      expect(traffic.events).toEqual([]);
      const port = Number(/:(\d+)$/.exec(proof.marker)?.[1]);
      expect(port).toBeGreaterThan(0);
      expect(traffic.packets.some((p) => p.dst === '127.0.0.1' && p.dstPort === port)).toBe(false);
    } finally {
      await live.close();
    }
  });
});
