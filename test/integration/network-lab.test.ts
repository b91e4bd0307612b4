import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import { DECOY_ADDRESSES } from '../../lab/netns/addresses.js';
import { startHostLeakWatch } from '../../lab/netns/host-leak-watch.js';
import { icmpPing } from '../../probes/icmp-ping/probe.js';
import { publicEgressIpv4 } from '../../probes/public-egress-ipv4/probe.js';
import { securitySuite } from '../../suites/index.js';
import { runInLab } from '../helpers/lab-run.js';

const isRoot = process.getuid?.() === 0;
const networkProbes = securitySuite.filter((p) => p.category === 'network');
const allowOne: Policy = { ...CI_POLICY, name: 'allow-one', network: { mode: 'allowlist', allow: ['203.0.113.10:80'] } };

async function labNamespaces(): Promise<string[]> {
  const out = await execa('ip', ['netns', 'list'], { reject: false });
  return out.stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith('sc-'));
}

describe.skipIf(!isRoot)('network probes in the lab (needs root: run by CI as root)', () => {
  it('every network probe is crossed on the control, with a decoy log line or a packet as evidence, and the host sees none of it', async () => {
    const watch = await startHostLeakWatch(DECOY_ADDRESSES.map((a) => a.address));
    const { security } = await runInLab('rnet1', new ProcessBackend(), CI_POLICY, networkProbes);
    await watch.proveLive();
    const leak = await watch.stop();
    expect(security.filter((r) => r.verdict !== 'crossed').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`)).toEqual([]);
    for (const r of security) {
      expect(
        r.evidence.some((e) => e.source === 'outside' && (e.witness === 'packet-witness' || e.witness.startsWith('decoy:') || e.witness === 'canary-scan')),
        r.id,
      ).toBe(true);
    }
    const metadata = security.find((r) => r.id === 'metadata-ipv4');
    expect(metadata?.evidence.some((e) => e.witness === 'decoy:metadata')).toBe(true);
    expect(security.find((r) => r.id === 'dns-exfil')?.evidence.some((e) => e.witness === 'decoy:dns')).toBe(true);
    // A capture on the machine's own namespace saw no packet of the run (and proved it was live).
    expect(leak.leaks).toEqual([]);
    expect(leak.controlSeen).toBeGreaterThan(0);
    expect(await labNamespaces()).not.toContain('sc-rnet1');
  });

  it('every network probe is held when the box has a fresh empty network namespace', async () => {
    const { security } = await runInLab('rnet2', new ProcessBackend({ network: 'isolated' }), CI_POLICY, networkProbes);
    expect(security.filter((r) => r.verdict !== 'held').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`)).toEqual([]);
  });

  it('with an allowlist of one canary host: that host is reached (positive control) and the rest held', async () => {
    const filtered = await runInLab('rnet3', new ProcessBackend({ network: 'policy-filter' }), allowOne, [publicEgressIpv4]);
    expect(filtered.security[0]?.verdict, filtered.security[0]?.reason).toBe('held');
    expect(filtered.security[0]?.evidence.some((e) => e.witness === 'decoy:canary-http' && e.where === '203.0.113.10:80')).toBe(true);
    // The same allowlist on the unfiltered control: the other hosts are crossings.
    const open = await runInLab('rnet4', new ProcessBackend(), allowOne, [publicEgressIpv4]);
    expect(open.security[0]?.verdict).toBe('crossed');
    expect(open.security[0]?.reason).toContain('198.51.100.10:443');
    expect(open.security[0]?.reason).not.toContain('203.0.113.10:80');
    // A box with no network at all cannot reach the allowed host: the positive control fails → inconclusive, never held.
    const dead = await runInLab('rnet5', new ProcessBackend({ network: 'isolated' }), allowOne, [publicEgressIpv4]);
    expect(dead.security[0]?.verdict).toBe('inconclusive');
    expect(dead.security[0]?.reason).toMatch(/positive control failed/);
  });

  it('an allowlist entry for tcp/80 does not allow an ICMP echo to the same address: the echo that arrived is crossed', async () => {
    const { security } = await runInLab('rnet6', new ProcessBackend(), allowOne, [icmpPing]);
    expect(security[0]?.verdict, security[0]?.reason).toBe('crossed');
    expect(security[0]?.reason).toContain('icmp 203.0.113.10');
    expect(security[0]?.evidence.some((e) => e.witness === 'witness-health' && /proof of life true/.test(e.detail))).toBe(true);
  });
});
