import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { DecoyEventSchema, DecoyLog } from '../../lab/decoys/decoy-log.js';
import { DecoyBindError, LabConfigError } from '../../lab/decoys/errors.js';
import {
  defaultLabServices,
  LabConfigSchema,
  parseLabConfig,
  planMetadataDiversions,
  startLabServices,
  type LabConfigInput,
} from '../../lab/decoys/lab-server.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const labServerTs = fileURLToPath(new URL('../../lab/decoys/lab-server.ts', import.meta.url));

const canaries = {
  accessKeyId: 'ASIALABSERVERCANARY',
  secretAccessKey: 'sc-lab-secret',
  token: 'sc-lab-token',
  imdsToken: 'sc-lab-imds',
};

function loopbackConfig(): LabConfigInput {
  return {
    canaries,
    services: [
      { kind: 'metadata', host: '127.0.0.1', port: 0 },
      { kind: 'metadata', host: '::1', port: 0 },
      { kind: 'dns', host: '127.0.0.1', port: 0, answers: { a: '192.0.2.10', aaaa: '2001:db8::10' } },
      { kind: 'canary-tcp', host: '127.0.0.1', port: 0, banner: 'sc-lab-banner' },
      { kind: 'catch-all-udp', host: '::1', port: 0 },
    ],
  };
}

function httpGet(host: string, port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function udpDnsQuery(host: string, port: number, name: string): Promise<dnsPacket.DecodedPacket> {
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no DNS answer'));
    }, 3000);
    socket.once('message', (m: Buffer) => {
      clearTimeout(timer);
      socket.close();
      resolve(dnsPacket.decode(m));
    });
    socket.send(dnsPacket.encode({ type: 'query', id: 3, questions: [{ type: 'A', name }] }), port, host);
  });
}

const NET_RESOURCES = new Set(['TCPServerWrap', 'TCPSocketWrap', 'UDPWrap']);
function openNetHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => NET_RESOURCES.has(r)).length;
}
async function settleHandles(expected: number): Promise<number> {
  const deadline = Date.now() + 2000;
  while (openNetHandles() > expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return openNetHandles();
}

describe('lab configuration', () => {
  it('expresses the default lab listeners', () => {
    const config = parseLabConfig({ canaries, services: defaultLabServices() });
    const endpoints = config.services.map((s) => `${s.kind} ${s.host} ${s.port}`);
    expect(endpoints).toEqual(
      expect.arrayContaining([
        'metadata 169.254.169.254 80',
        'metadata fd00:ec2::254 80',
        'metadata 100.100.100.200 80',
        'dns 192.0.2.53 53',
        'canary-tcp 0.0.0.0 80',
        'canary-tcp :: 443',
        'canary-tcp :: 22',
        'canary-tcp 0.0.0.0 8080',
        'catch-all-udp 0.0.0.0 9',
        'catch-all-udp :: 123',
      ]),
    );
    expect(config.roleName).toBe('sandcheck-role');
    expect(config.maxEvents).toBe(10_000);
    const dns = config.services.find((s) => s.kind === 'dns');
    expect(dns?.kind === 'dns' ? dns.answers.overrides?.['metadata.google.internal'] : undefined).toEqual({
      a: '169.254.169.254',
    });
  });

  it('plans the metadata addresses through the wildcard canary on port 80 of their family', () => {
    const services = defaultLabServices();
    const plan = planMetadataDiversions(services);
    const described = [...plan].map(([m, c]) => {
      const metadata = services[m];
      const canary = services[c];
      return `${metadata?.host} -> ${canary?.host}:${canary?.port}`;
    });
    expect(described.sort()).toEqual([
      '100.100.100.200 -> 0.0.0.0:80',
      '169.254.169.254 -> 0.0.0.0:80',
      '64:ff9b:1::a9fe:a9fe -> :::80',
      '64:ff9b::a9fe:a9fe -> :::80',
      'fd00:ec2::254 -> :::80',
    ]);
    expect(planMetadataDiversions(loopbackConfig().services)).toEqual(new Map());
  });

  it('rejects bad configurations with every problem listed', () => {
    expect(() => parseLabConfig({ canaries, services: [] })).toThrow(LabConfigError);
    const bad = LabConfigSchema.safeParse({
      canaries,
      services: [
        { kind: 'canary-tcp', host: '127.0.0.1', port: 8080 },
        { kind: 'canary-tcp', host: '127.0.0.1', port: 8080 },
        { kind: 'metadata', host: 'metadata.local', port: 80 },
        { kind: 'dns', host: '::1', port: 70000, answers: { a: '::1', aaaa: '::1' } },
        { kind: 'teapot', host: '::1', port: 1 },
      ],
    });
    expect(bad.success).toBe(false);
    try {
      parseLabConfig({ canaries: { ...canaries, token: '' }, services: [{ kind: 'canary-tcp', host: '::1', port: 1 }] });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(LabConfigError);
      expect((error as LabConfigError).issues.join('\n')).toContain('canaries.token');
    }
    expect(() =>
      parseLabConfig({
        canaries,
        services: [
          { kind: 'canary-tcp', host: '127.0.0.1', port: 8080 },
          { kind: 'canary-tcp', host: '127.0.0.1', port: 8080 },
        ],
      }),
    ).toThrow(/duplicate listener tcp 127\.0\.0\.1:8080/);
  });
});

describe('startLabServices (in process)', () => {
  it('starts every service, logs contacts, and leaves no open handle after close()', async () => {
    const before = openNetHandles();
    const lab = await startLabServices(loopbackConfig());
    try {
      expect(lab.listeners.map((l) => `${l.service}/${l.proto}/${l.host}`)).toEqual([
        'metadata/tcp/127.0.0.1',
        'metadata/tcp/::1',
        'dns/udp/127.0.0.1',
        'dns/tcp/127.0.0.1',
        'canary-tcp/tcp/127.0.0.1',
        'catch-all-udp/udp/::1',
      ]);
      for (const l of lab.listeners) expect(l.port).toBeGreaterThan(0);
      const port = (service: string, host: string): number => lab.listeners.find((l) => l.service === service && l.host === host)?.port ?? 0;

      expect(await httpGet('::1', port('metadata', '::1'), '/latest/meta-data/iam/security-credentials/')).toBe('sandcheck-role');
      const answer = await udpDnsQuery('127.0.0.1', port('dns', '127.0.0.1'), 'sc-lab.exfil.example');
      expect(answer.answers).toMatchObject([{ data: '192.0.2.10' }]);
      expect(await httpGet('127.0.0.1', port('canary-tcp', '127.0.0.1'), '/x')).toBe('sc-lab-banner\n');

      await lab.log.waitFor((e) => e.service === 'canary-http');
      expect(lab.log.events().map((e) => `${e.service} ${e.local.address} ${e.summary}`)).toEqual([
        'metadata ::1 GET /latest/meta-data/iam/security-credentials/',
        'dns 127.0.0.1 A? sc-lab.exfil.example.',
        'canary-http 127.0.0.1 GET /x',
      ]);
    } finally {
      await lab.close();
    }
    expect(await settleHandles(before)).toBe(before);
  });

  it('fails with a typed error when a port is taken and closes what had started', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0 }, () => resolve()));
    const address = blocker.address();
    const taken = typeof address === 'object' && address !== null ? address.port : 0;
    const before = openNetHandles();
    try {
      const attempt = startLabServices({
        canaries,
        services: [
          { kind: 'metadata', host: '127.0.0.1', port: 0 },
          { kind: 'catch-all-udp', host: '127.0.0.1', port: 0 },
          { kind: 'canary-tcp', host: '127.0.0.1', port: taken },
        ],
      });
      await expect(attempt).rejects.toBeInstanceOf(DecoyBindError);
      await expect(attempt).rejects.toMatchObject({ systemCode: 'EADDRINUSE', port: taken, proto: 'tcp' });
      expect(await settleHandles(before)).toBe(before);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('writes into a caller-provided log', async () => {
    const log = new DecoyLog({ maxEvents: 1 });
    const lab = await startLabServices({ canaries, services: [{ kind: 'canary-tcp', host: '127.0.0.1', port: 0 }] }, { log });
    try {
      expect(lab.log).toBe(log);
      const port = lab.listeners[0]?.port ?? 0;
      for (let i = 0; i < 2; i += 1) await httpGet('127.0.0.1', port, `/n${i}`);
      expect(log.events()).toHaveLength(1);
      expect(log.dropped).toBe(1);
    } finally {
      await lab.close();
    }
  });
});

interface Child {
  proc: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnLabServer(config: unknown): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', labServerTs, JSON.stringify(config)], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  return { proc, lines, exited };
}

async function nextJson(child: Child, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no line from lab-server in time')), timeoutMs);
  });
  try {
    const next = await Promise.race([child.lines.next(), timeout]);
    if (next.done === true) throw new Error('lab-server stdout ended');
    return JSON.parse(next.value) as Record<string, unknown>;
  } finally {
    clearTimeout(timer);
  }
}

function listenerPort(ready: Record<string, unknown>, service: string): number {
  const listeners = ready['listeners'];
  if (!Array.isArray(listeners)) throw new Error('ready line without listeners');
  for (const l of listeners as { service: string; port: number }[]) if (l.service === service) return l.port;
  throw new Error(`no ${service} listener`);
}

describe('lab-server process', () => {
  it('prints ready and event lines and exits cleanly when stdin closes', async () => {
    const child = spawnLabServer(loopbackConfig());
    try {
      const ready = await nextJson(child);
      expect(ready).toMatchObject({ type: 'ready', pid: child.proc.pid });
      const port = listenerPort(ready, 'metadata');

      const creds = await httpGet('127.0.0.1', port, '/latest/meta-data/iam/security-credentials/sandcheck-role');
      expect(JSON.parse(creds)).toMatchObject({ AccessKeyId: canaries.accessKeyId });

      const line = await nextJson(child);
      expect(line['type']).toBe('event');
      const event = DecoyEventSchema.parse(line['event']);
      expect(event).toMatchObject({
        service: 'metadata',
        local: { address: '127.0.0.1', port },
        summary: 'GET /latest/meta-data/iam/security-credentials/sandcheck-role',
      });

      child.proc.stdin.end();
      const stopped = await nextJson(child);
      expect(stopped).toEqual({ type: 'stopped', reason: 'stdin closed', events: 1, dropped: 0 });
      expect(await child.exited).toEqual({ code: 0, signal: null });
      await expect(httpGet('127.0.0.1', port, '/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      child.proc.kill('SIGKILL');
    }
  });

  it('exits cleanly on SIGTERM with connections still open', async () => {
    const child = spawnLabServer({ canaries, services: [{ kind: 'canary-tcp', host: '127.0.0.1', port: 0 }] });
    try {
      const ready = await nextJson(child);
      const port = listenerPort(ready, 'canary-tcp');
      const idle = connect({ host: '127.0.0.1', port });
      idle.on('error', () => undefined);
      await new Promise<void>((resolve) => idle.once('connect', () => resolve()));
      child.proc.kill('SIGTERM');
      const event = await nextJson(child);
      expect(event['type']).toBe('event');
      expect(DecoyEventSchema.parse(event['event']).detail?.['endedBy']).toBe('shutdown');
      expect(await nextJson(child)).toMatchObject({ type: 'stopped', reason: 'SIGTERM' });
      expect(await child.exited).toEqual({ code: 0, signal: null });
      idle.destroy();
    } finally {
      child.proc.kill('SIGKILL');
    }
  });

  it('reports an invalid configuration as an error line and exit code 2', async () => {
    const child = spawnLabServer({ canaries, services: [{ kind: 'metadata', host: 'not-an-address', port: 80 }] });
    try {
      const line = await nextJson(child);
      expect(line).toMatchObject({ type: 'error', code: 'CONFIG_INVALID' });
      expect(String(line['message'])).toContain('services.0.host');
      expect((await child.exited).code).toBe(2);
    } finally {
      child.proc.kill('SIGKILL');
    }
  });
});
