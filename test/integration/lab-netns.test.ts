import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DECOY_ADDRESSES,
  LAB_STATE_DIR,
  createLabNamespace,
  isLabError,
  nsenterArgv,
  probeLabSupport,
  randomRunId,
  resolvConfFor,
  startHostLeakWatch,
  startPacketWitness,
  sweepStaleLabs,
  type HostLeakWatch,
  type LabNamespace,
  type Packet,
  type PacketWitness,
} from '../../lab/netns/index.js';
import { startCapture } from '../../lab/netns/capture.js';

const support = await probeLabSupport();
const skipReason = support.available ? '' : ` (skipped: no lab here: ${support.reason}; ${support.hint})`;
const REPO = resolve(import.meta.dirname, '../..');

/** Destinations the test dials from inside the lab; the host capture must never see any of them. */
const DIALLED = ['169.254.169.254', '2001:db8::10', '8.8.8.8', '198.51.100.10', 'fd00:ec2::254', '203.0.113.77', '2001:db8::77'];

async function run(lab: LabNamespace, argv: readonly string[]): Promise<{ exitCode: number | undefined; stdout: string; stderr: string }> {
  const [file, ...args] = nsenterArgv(lab, argv);
  const r = await execa(file ?? 'nsenter', args, { reject: false, timeout: 15_000 });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

async function netnsNames(): Promise<string[]> {
  const { stdout } = await execa('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
}

/** Alive and not a zombie. */
function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

const PY_DIAL = String.raw`
import socket, struct
def tcp(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(2)
    try:
        s.connect(addr); print("tcp", addr[0], "connected")
    except OSError as e:
        print("tcp", addr[0], "errno", e.errno)
    finally:
        s.close()
def checksum(b):
    if len(b) % 2: b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b)); t = (t >> 16) + (t & 0xffff); t += t >> 16
    return ~t & 0xffff
def ping(family, addr):
    proto, kind = (socket.IPPROTO_ICMP, 8) if family == socket.AF_INET else (socket.IPPROTO_ICMPV6, 128)
    s = socket.socket(family, socket.SOCK_RAW, proto); s.settimeout(2)
    body = struct.pack("!HH", 0x5c5c, 1) + b"sandcheck"
    hdr = struct.pack("!BBH", kind, 0, 0)
    # The kernel fills in the ICMPv6 checksum itself; ICMPv4 needs ours.
    csum = checksum(hdr + body) if family == socket.AF_INET else 0
    s.sendto(struct.pack("!BBH", kind, 0, csum) + body, (addr, 0)); s.close(); print("icmp", addr, "sent")
tcp(socket.AF_INET, ("169.254.169.254", 80))
tcp(socket.AF_INET6, ("2001:db8::10", 443))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b"\x12\x34", ("8.8.8.8", 53)); u.close(); print("udp 8.8.8.8 sent")
ping(socket.AF_INET, "198.51.100.10")
ping(socket.AF_INET6, "fd00:ec2::254")
`;

// Listens on 0.0.0.0:8080 and [::]:8080; the catch-all route makes every address reach it.
const NODE_LISTENER = String.raw`
const net = require('node:net');
const onConnection = (sock) => {
  console.log('hit ' + sock.localAddress + ' ' + sock.remoteAddress);
  sock.end('hello from the lab\n');
};
net.createServer(onConnection).listen(8080, '0.0.0.0', () => {
  net.createServer(onConnection).listen({ port: 8080, host: '::', ipv6Only: true }, () => console.log('listening'));
});
`;

const PY_CLIENT = String.raw`
import socket
for host in ("203.0.113.77", "2001:db8::77"):
    s = socket.create_connection((host, 8080), timeout=3)
    print(s.recv(100).decode().strip()); s.close()
`;

describe.skipIf(!support.available)(`lab network namespace and packet witness${skipReason}`, () => {
  const runId = randomRunId();
  let lab: LabNamespace | undefined;
  let witness: PacketWitness | undefined;
  let hostWatch: HostLeakWatch | undefined;
  let packets: Packet[] = [];

  beforeAll(async () => {
    hostWatch = await startHostLeakWatch([...DECOY_ADDRESSES.map((a) => a.address), ...DIALLED]);
    await hostWatch.proveLive();
  });

  afterAll(async () => {
    await witness?.stop();
    await lab?.destroy();
    await hostWatch?.stop();
  });

  it('creates sc-<runId> with the decoy addresses on lo and catch-all local routes', async () => {
    lab = await createLabNamespace({ runId });
    console.log(`lab create: ${lab.createMs.toFixed(1)} ms`);
    expect(lab.name).toBe(`sc-${runId}`);
    expect(lab.path).toBe(`/run/netns/sc-${runId}`);
    expect(await netnsNames()).toContain(lab.name);
    expect(existsSync(join(LAB_STATE_DIR, `${lab.name}.json`))).toBe(true);

    const { stdout } = await execa('ip', ['-j', '-n', lab.name, 'addr', 'show', 'dev', 'lo']);
    const links = JSON.parse(stdout) as { operstate: string; flags: string[]; addr_info: { local: string; prefixlen: number }[] }[];
    const lo = links[0];
    expect(lo?.flags).toContain('UP');
    const have = new Set(lo?.addr_info.map((a) => `${a.local}/${a.prefixlen}`));
    for (const decoy of DECOY_ADDRESSES) expect(have, decoy.cidr).toContain(decoy.cidr);

    const v4 = await execa('ip', ['-n', lab.name, 'route', 'show', 'table', 'local']);
    expect(v4.stdout).toMatch(/^local default dev lo/m);
    const v6 = await execa('ip', ['-n', lab.name, '-6', 'route', 'show', 'table', 'local']);
    expect(v6.stdout).toMatch(/^local default dev lo/m);
    // No interface but lo, so nothing can route out.
    const links2 = await execa('ip', ['-n', lab.name, '-o', 'link']);
    expect(links2.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a second lab with the same run id and rejects bad run ids', async () => {
    await expect(createLabNamespace({ runId })).rejects.toSatisfy((e: unknown) => isLabError(e, 'LAB_EXISTS'));
    await expect(createLabNamespace({ runId: 'Bad_Id' })).rejects.toSatisfy((e: unknown) => isLabError(e, 'LAB_INVALID_RUN_ID'));
    await expect(createLabNamespace({ runId: 'a'.repeat(13) })).rejects.toSatisfy((e: unknown) => isLabError(e, 'LAB_INVALID_RUN_ID'));
  });

  it('builds nsenter argv and a resolv.conf naming the lab resolver', async () => {
    if (lab === undefined) throw new Error('no lab');
    expect(nsenterArgv(lab, ['python3', '-V'])).toEqual(['nsenter', `--net=${lab.path}`, '--', 'python3', '-V']);
    const file = await resolvConfFor(lab);
    expect(file.startsWith(lab.scratchDir)).toBe(true);
    expect(readFileSync(file, 'utf8')).toMatch(/^nameserver 192\.0\.2\.53$/m);
    const inside = await run(lab, ['readlink', '/proc/self/ns/net']);
    expect(inside.stdout.trim()).toBe(`net:[${lab.inode}]`);
  });

  it('witnesses v4 and v6 SYNs, UDP and ICMP from inside the lab, and no SYN-ACKs', async () => {
    if (lab === undefined) throw new Error('no lab');
    const seen: Packet[] = [];
    witness = await startPacketWitness(lab, { onPacket: (p) => seen.push(p) });
    expect(readFileSync(`/proc/${witness.pid}/comm`, 'utf8').trim()).toBe('tcpdump');

    const dial = await run(lab, ['python3', '-c', PY_DIAL]);
    expect(dial.stderr).toBe('');
    expect(dial.stdout).toContain('tcp 169.254.169.254 errno 111');
    expect(dial.stdout).toContain('tcp 2001:db8::10 errno 111');

    // The listener answers any address thanks to the catch-all route.
    const listener = lab.spawn([process.execPath, '-e', NODE_LISTENER], { reject: false });
    const lines: string[] = [];
    createInterface({ input: listener.stdout }).on('line', (l) => lines.push(l));
    expect(await waitFor(() => lines.includes('listening'), 10_000)).toBe(true);
    const client = await run(lab, ['python3', '-c', PY_CLIENT]);
    expect(client.stdout.trim().split('\n')).toEqual(['hello from the lab', 'hello from the lab']);
    expect(await waitFor(() => lines.filter((l) => l.startsWith('hit ')).length === 2, 5000)).toBe(true);
    expect(lines.filter((l) => l.startsWith('hit ')).map((l) => l.split(' ')[1])).toEqual(['203.0.113.77', '2001:db8::77']);

    expect(await waitFor(() => seen.some((p) => p.dst === '2001:db8::77'), 5000)).toBe(true);
    packets = await witness.stop();
    expect(packets).toEqual(seen);

    const has = (proto: Packet['proto'], dst: string, dstPort?: number): boolean =>
      packets.some((p) => p.proto === proto && p.dst === dst && (dstPort === undefined || p.dstPort === dstPort));
    expect(has('tcp', '169.254.169.254', 80)).toBe(true);
    expect(has('tcp', '2001:db8::10', 443)).toBe(true);
    expect(has('udp', '8.8.8.8', 53)).toBe(true);
    expect(has('icmp', '198.51.100.10')).toBe(true);
    expect(has('icmp6', 'fd00:ec2::254')).toBe(true);
    expect(has('tcp', '203.0.113.77', 8080)).toBe(true);
    expect(has('tcp', '2001:db8::77', 8080)).toBe(true);
    const tcp = packets.filter((p) => p.proto === 'tcp');
    // Accepted connections answered with SYN-ACKs (v4 and v6); the witness must record only the initial SYNs.
    expect(tcp).toHaveLength(4);
    for (const p of tcp) expect(p.raw, 'only initial SYNs').toContain('Flags [S],');
    expect(packets.find((p) => p.dst === '2001:db8::10' && p.proto === 'tcp')?.family).toBe(6);
    expect(witness.stats()).toMatchObject({ overflow: 0, droppedByKernel: 0 });
  });

  it('reports a capture that cannot start as WITNESS_FAILED with tcpdump’s own words', async () => {
    if (lab === undefined) throw new Error('no lab');
    const failure = await startCapture({ netns: lab, filter: 'tcp port nonsense' }).catch((e: unknown) => e);
    expect(isLabError(failure, 'WITNESS_FAILED')).toBe(true);
    expect(String(failure)).toMatch(/exited before listening: .*nonsense/);
  });

  it('destroy() kills what runs inside, deletes the namespace, and is idempotent', async () => {
    if (lab === undefined) throw new Error('no lab');
    const forgotten = await startPacketWitness(lab);
    const sleeper = lab.spawn(['sleep', '300'], { reject: false });
    const sleeperPid = sleeper.pid ?? -1;
    const scratch = lab.scratchDir;

    const report = await lab.destroy();
    console.log(`lab destroy: ${report.durationMs.toFixed(1)} ms (signalled ${report.signalled}, SIGKILLed ${report.killed})`);
    expect(report.survivors).toEqual([]);
    expect(report.signalled).toBeGreaterThanOrEqual(3);
    expect(await netnsNames()).not.toContain(lab.name);
    expect(existsSync(lab.path)).toBe(false);
    expect(existsSync(join(LAB_STATE_DIR, `${lab.name}.json`))).toBe(false);
    expect(existsSync(scratch)).toBe(false);
    expect(await waitFor(() => !pidAlive(forgotten.pid), 3000)).toBe(true);
    expect(witness !== undefined && pidAlive(witness.pid)).toBe(false);
    expect(await waitFor(() => !pidAlive(sleeperPid), 3000)).toBe(true);
    expect((await sleeper).signal).toBe('SIGTERM');
    await forgotten.stop();

    expect((await lab.destroy()).alreadyDestroyed).toBe(true);
    expect(() => lab?.spawn(['true'])).toThrow(/destroyed/);
  });

  it('host capture saw none of the lab traffic (and did see its own loopback control)', async () => {
    if (hostWatch === undefined) throw new Error('no host watch');
    await hostWatch.proveLive();
    const report = await hostWatch.stop();
    hostWatch = undefined;
    expect(report.controlSeen).toBeGreaterThanOrEqual(2);
    expect(report.leaks.map((p) => p.raw)).toEqual([]);
    expect(packets.length).toBeGreaterThan(0);
  });
});

const OWNER_SCRIPT = `
import { createLabNamespace, startPacketWitness } from ${JSON.stringify(join(REPO, 'lab/netns/index.js'))};
const [mode, runId] = process.argv.slice(2);
const lab = await createLabNamespace({ runId });
const witness = await startPacketWitness(lab);
const sleeper = lab.spawn(['sleep', '300'], { reject: false });
console.log(JSON.stringify({ name: lab.name, scratchDir: lab.scratchDir, witnessPid: witness.pid, sleeperPid: sleeper.pid }));
if (mode === 'exit') process.exit(0);
setInterval(() => {}, 1000);
`;

interface OwnerInfo {
  name: string;
  scratchDir: string;
  witnessPid: number;
  sleeperPid: number;
}

describe.skipIf(!support.available)(`stale lab sweep and exit hook${skipReason}`, () => {
  let dir = '';
  let mine: LabNamespace | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandcheck-lab-owner-'));
    await writeFile(join(dir, 'owner.mts'), OWNER_SCRIPT);
  });

  afterAll(async () => {
    await mine?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  async function startOwner(mode: 'exit' | 'hang', runId: string): Promise<{ info: OwnerInfo; child: ReturnType<typeof execa> }> {
    const child = execa(process.execPath, ['--import', 'tsx', join(dir, 'owner.mts'), mode, runId], { cwd: REPO, reject: false, buffer: false });
    const first = await new Promise<string>((resolveLine, reject) => {
      const rl = createInterface({ input: child.stdout });
      rl.once('line', resolveLine);
      rl.once('close', () => reject(new Error('owner exited before reporting')));
    });
    return { info: JSON.parse(first) as OwnerInfo, child };
  }

  it('an owner that exits without destroy() still tears its lab down (exit hook)', async () => {
    const { info, child } = await startOwner('exit', randomRunId());
    await child;
    expect(await netnsNames()).not.toContain(info.name);
    expect(await waitFor(() => !pidAlive(info.witnessPid) && !pidAlive(info.sleeperPid), 3000)).toBe(true);
    expect(existsSync(join(LAB_STATE_DIR, `${info.name}.json`))).toBe(false);
    expect(existsSync(info.scratchDir)).toBe(false);
  });

  it('an owner stopped by SIGTERM tears its lab down and still dies of SIGTERM', async () => {
    const { info, child } = await startOwner('hang', randomRunId());
    child.kill('SIGTERM');
    expect((await child).signal).toBe('SIGTERM');
    expect(await netnsNames()).not.toContain(info.name);
    expect(await waitFor(() => !pidAlive(info.witnessPid) && !pidAlive(info.sleeperPid), 3000)).toBe(true);
  });

  it('removes a lab whose owner died (SIGKILL) with what ran inside, keeps a live owner’s lab', async () => {
    mine = await createLabNamespace({ runId: randomRunId() });
    const { info, child } = await startOwner('hang', randomRunId());
    child.kill('SIGKILL');
    await child;
    expect(await netnsNames()).toContain(info.name);
    expect(existsSync(info.scratchDir)).toBe(true);
    expect(pidAlive(info.sleeperPid)).toBe(true);

    const report = await sweepStaleLabs();
    expect(report.removed).toContain(info.name);
    expect(report.kept).toContain(mine.name);
    expect(report.removed).not.toContain(mine.name);
    expect(await netnsNames()).not.toContain(info.name);
    expect(await netnsNames()).toContain(mine.name);
    expect(existsSync(join(LAB_STATE_DIR, `${info.name}.json`))).toBe(false);
    expect(existsSync(info.scratchDir)).toBe(false);
    expect(await waitFor(() => !pidAlive(info.sleeperPid) && !pidAlive(info.witnessPid), 3000)).toBe(true);
  });
});
