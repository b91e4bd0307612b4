import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY, REFERENCE_POLICY } from '../../model/policy.js';
import { loadPolicy, parsePolicy } from '../../harness/policy-loader.js';
import { isAllowed, parseAllowEntry } from '../../model/network-allow.js';
import type { Policy } from '../../model/policy.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function policyFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandcheck-policy-test-'));
  dirs.push(dir);
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('policy', () => {
  it('has the essay numbers in the reference preset and a 5 s wall in ci', async () => {
    const ref = await loadPolicy('reference');
    expect(ref.resources).toEqual({ cpus: 2, memoryMb: 512, wallSeconds: 30, processes: 64, diskMb: 1024, wallToleranceMs: 1000 });
    expect(ref.exports).toEqual({ maxFiles: 20, maxFileMb: 5, maxTotalMb: 40 });
    expect(ref.output.maxBytes).toBe(2 * 1024 * 1024);
    expect(ref.attempts).toEqual({ corrections: 3, queueStartupSeconds: 12 });
    expect(ref.network).toEqual({ mode: 'off', allow: [] });
    expect((await loadPolicy('ci')).resources.wallSeconds).toBe(5);
    expect(CI_POLICY.resources.memoryMb).toBe(REFERENCE_POLICY.resources.memoryMb);
  });

  it('lets a YAML file extend a preset and override one field', async () => {
    const path = await policyFile('tight.yaml', 'extends: ci\nresources:\n  memoryMb: 256\n');
    const p = await loadPolicy(path);
    expect(p.resources.memoryMb).toBe(256);
    expect(p.resources.wallSeconds).toBe(5);
    expect(p.name).toBe('ci+tight.yaml');
  });

  it('reports a bad value with its path and the value it got', async () => {
    const path = await policyFile('bad.json', JSON.stringify({ resources: { memoryMb: -1 } }));
    const err = await loadPolicy(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((err as SandcheckError).message).toContain('resources.memoryMb: expected a positive integer, got -1');
  });

  it('rejects unknown keys and unknown presets', async () => {
    const typo = await policyFile('typo.yaml', 'resources:\n  memoryMB: 256\n');
    await expect(loadPolicy(typo)).rejects.toThrow(/resources: unknown key "memoryMB"/);
    const base = await policyFile('base.yaml', 'extends: lax\n');
    await expect(loadPolicy(base)).rejects.toThrow(/extends: expected one of reference, ci, got a string of 3 characters/);
    await expect(loadPolicy('no-such-policy')).rejects.toMatchObject({ code: 'POLICY_NOT_FOUND' });
  });

  it('takes resources.wallToleranceMs (default 1000) and refuses it outside 0..60000 ms', async () => {
    const none = await policyFile('tol.yaml', 'extends: ci\nresources:\n  wallToleranceMs: 0\n');
    expect((await loadPolicy(none)).resources.wallToleranceMs).toBe(0);
    const { wallToleranceMs: _dropped, ...withoutTolerance } = CI_POLICY.resources;
    expect(parsePolicy({ ...CI_POLICY, resources: withoutTolerance }, 'inline').resources.wallToleranceMs).toBe(1000);
    for (const bad of [-1, 60_001, 1.5]) {
      expect(() => parsePolicy({ ...CI_POLICY, resources: { ...CI_POLICY.resources, wallToleranceMs: bad } }, 'inline')).toThrow(
        `resources.wallToleranceMs: expected an integer 0..60000 (ms), got ${bad}`,
      );
    }
  });
});

describe('network.allow entries', () => {
  const allow = (...entries: string[]): Policy => ({ ...CI_POLICY, network: { mode: 'allowlist', allow: entries } });

  it('refuses an entry that is not one, with its path and what a valid entry looks like', async () => {
    const path = await policyFile('nope.yaml', 'extends: ci\nnetwork:\n  mode: allowlist\n  allow: [nope]\n');
    const err = await loadPolicy(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).message).toMatch(/network\.allow\.0: .*expected an entry such as tcp:203\.0\.113\.10:80.*got a string of 4 characters/);
    for (const bad of [
      'tcp:2001:db8::10:80',
      'icmp:203.0.113.10:80',
      'udp:203.0.113.10:0',
      'tcp:203.0.113.0/33:80',
      'sctp:203.0.113.10:80',
      '203.0.113.10:80:1',
      '',
    ]) {
      expect(parseAllowEntry(bad).ok, bad).toBe(false);
    }
  });

  it('reads a protocol, an address or prefix and a port; an old host:port means tcp', () => {
    expect(parseAllowEntry('udp:[2001:db8::10]:53')).toEqual({
      ok: true,
      rule: { entry: 'udp:[2001:db8::10]:53', proto: 'udp', family: 6, address: '2001:db8::10', prefix: 128, port: 53 },
    });
    expect(parseAllowEntry('tcp:198.51.100.0/24:443')).toMatchObject({
      ok: true,
      rule: { proto: 'tcp', family: 4, address: '198.51.100.0', prefix: 24, port: 443 },
    });
    expect(parseAllowEntry('icmp:203.0.113.10')).toMatchObject({ ok: true, rule: { proto: 'icmp', prefix: 32 } });
    expect(parseAllowEntry('203.0.113.10:80')).toMatchObject({ ok: true, rule: { proto: 'tcp', port: 80 } });
    expect(parseAllowEntry('[2001:db8::10]:80')).toMatchObject({ ok: true, rule: { proto: 'tcp', family: 6, port: 80 } });
    expect(parseAllowEntry('203.0.113.0/24')).toMatchObject({ ok: true, rule: { proto: 'all', prefix: 24 } });
    expect(() => parsePolicy(allow('tcp:203.0.113.10:80', 'udp:203.0.113.10:123', 'icmp:2001:db8::10', '203.0.113.10:80'), 'inline')).not.toThrow();
  });

  it('matches by protocol, prefix and port: an ICMP echo is not allowed by a tcp/80 entry', () => {
    const web = allow('203.0.113.10:80');
    expect(isAllowed(web, { proto: 'tcp', address: '203.0.113.10', port: 80 })).toBe(true);
    expect(isAllowed(web, { proto: 'icmp', address: '203.0.113.10' })).toBe(false);
    expect(isAllowed(web, { proto: 'udp', address: '203.0.113.10', port: 80 })).toBe(false);
    expect(isAllowed(web, { proto: 'tcp', address: '203.0.113.10', port: 443 })).toBe(false);
    expect(isAllowed(web, { proto: 'tcp', address: '203.0.113.10' })).toBe(false);
    expect(isAllowed(web, { proto: 'tcp', address: '::ffff:203.0.113.10', port: 80 })).toBe(true);
    const net = allow('tcp:198.51.100.0/24:443', 'icmp:203.0.113.10', 'udp:[2001:db8::/32]:53');
    expect(isAllowed(net, { proto: 'tcp', address: '198.51.100.77', port: 443 })).toBe(true);
    expect(isAllowed(net, { proto: 'tcp', address: '198.51.101.1', port: 443 })).toBe(false);
    expect(isAllowed(net, { proto: 'icmp', address: '203.0.113.10' })).toBe(true);
    expect(isAllowed(net, { proto: 'tcp', address: '203.0.113.10', port: 80 })).toBe(false);
    expect(isAllowed(net, { proto: 'udp', address: '2001:db8:ffff::1', port: 53 })).toBe(true);
    expect(isAllowed(net, { proto: 'udp', address: '2001:db9::1', port: 53 })).toBe(false);
    expect(isAllowed(allow('203.0.113.0/24'), { proto: 'icmp', address: '203.0.113.9' })).toBe(true);
    // Network off: an allow list left in the file allows nothing.
    expect(isAllowed({ ...web, network: { mode: 'off', allow: ['203.0.113.10:80'] } }, { proto: 'tcp', address: '203.0.113.10', port: 80 })).toBe(false);
  });
});
