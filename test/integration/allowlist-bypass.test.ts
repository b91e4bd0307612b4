/**
 * The allowlist probes (issue #17) against three boxes in the lab, each under a policy that allows one lab canary host
 * (tcp 203.0.113.20:80), the lab resolver over UDP and the lab's fronting proxy:
 * (a) the control behind an iptables allowlist built from that policy (an address filter),
 * (b) the unsandboxed control (the positive control of every probe),
 * (c) srt with a settings file whose allowedDomains are the lab's allowed names (a domain filter through its proxies);
 * and the address filter under an allowlist that names no relaying front (every bypass held), and with exactly one hole
 * each (the bypass it opens crossed, the others held).
 * The verdicts are judged from the lab's decoy logs and packet capture only; each expectation names its evidence.
 */
import { describe, expect, it } from 'vitest';
import { missingRequirements } from '../../backends/presets/catalog.js';
import { PresetBackend } from '../../backends/presets/preset-backend.js';
import { SRT_SETTINGS, srtPreset } from '../../backends/presets/srt.js';
import { commandRuntime, parseCommandConfig } from '../../backends/command/index.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { ALLOWLIST_NAMES } from '../../lab/decoys/lab-config.js';
import { LAB_ALLOWED_HOST, LAB_FRONT } from '../../lab/netns/addresses.js';
import { allowlistSuite } from '../../suites/allowlist.js';
import { runInLab } from '../helpers/lab-run.js';
import { DECOY_ADDRESSES, LAB_FRONT_RELAY_SOURCE } from '../../lab/netns/addresses.js';
import { startHostLeakWatch } from '../../lab/netns/host-leak-watch.js';

/** Every address the allowlist probes dial or relay to: none may appear on the machine's own interfaces. */
const DIALLED = [
  ...DECOY_ADDRESSES.map((a) => a.address),
  LAB_ALLOWED_HOST,
  LAB_FRONT.host,
  LAB_FRONT_RELAY_SOURCE,
  '203.0.113.66',
  '192.0.2.10',
  '198.51.100.53',
];

const isRoot = process.getuid?.() === 0;

const ALLOWLIST: Policy = {
  ...CI_POLICY,
  name: 'allowlist-lab',
  resources: { ...CI_POLICY.resources, wallSeconds: 20 },
  network: { mode: 'allowlist', allow: [`tcp:${LAB_ALLOWED_HOST}:80`, 'udp:192.0.2.53:53', `tcp:${LAB_FRONT.host}:${LAB_FRONT.port}`] },
};

/** The same allowlist without the lab's front: no allowed host relays. */
const NO_FRONT: Policy = {
  ...ALLOWLIST,
  name: 'allowlist-lab-no-front',
  network: { mode: 'allowlist', allow: [`tcp:${LAB_ALLOWED_HOST}:80`, 'udp:192.0.2.53:53'] },
};

/**
 * On 2 loaded cores the lab's kernel counters may show a few dropped packets in a window: that window is inconclusive,
 * never held (seen once for allowlist-nat64 on srt, not again alone). At most one such result per run is tolerated.
 */
const WITNESS_DROPS = /the network witnesses could not see this window: \d+ packets or datagrams were dropped/;
function expectHeld(rs: Map<string, SecurityResult>, ids: readonly string[]): void {
  let tolerated = 0;
  for (const id of ids) {
    const r = rs.get(id);
    if (r?.verdict === 'inconclusive' && WITNESS_DROPS.test(r.reason) && tolerated++ === 0) {
      console.log(`tolerated under load: ${show(r)}`);
      continue;
    }
    expect(r?.verdict, show(r)).toBe('held');
    // Held needs the allowed path to have worked: the control's marked request at the allowed canary.
    expect(outsideLine(r, /^decoy:canary-http$/, /203\.0\.113\.20:80 GET \/sc[0-9a-f]+-control/), show(r)).toBe(true);
    expect(outsideLine(r, /^witness-health$/, /proof of life true/)).toBe(true);
  }
}

const byId = (rs: readonly SecurityResult[]): Map<string, SecurityResult> => new Map(rs.map((r) => [r.id, r]));
// An inconclusive result also shows the head of the box's stderr: why a payload never started (seen once on srt under load).
const show = (r: SecurityResult | undefined): string =>
  `${r?.id}: ${r?.verdict}: ${r?.reason}\n${(r?.evidence ?? []).map((e) => `  ${e.source} ${e.witness} ${e.where ?? ''} ${e.detail}`).join('\n')}` +
  (r?.verdict === 'inconclusive' ? `\n  stderr: ${r.observation?.stderr.preview.slice(0, 600) ?? '(none kept)'}` : '');
/** An outside decoy line or capture line whose text matches. */
const outsideLine = (r: SecurityResult | undefined, witness: RegExp, detail: RegExp): boolean =>
  (r?.evidence ?? []).some((e) => e.source === 'outside' && witness.test(e.witness) && detail.test(`${e.where ?? ''} ${e.detail}`));

describe.skipIf(!isRoot)('allowlist bypasses in the lab (needs root)', () => {
  it('without an allowlist every allowlist probe is not applicable, without running', async () => {
    const { security } = await runInLab('ral0', new ProcessBackend(), CI_POLICY, allowlistSuite);
    expect(security.map((r) => `${r.id}: ${r.verdict}`)).toEqual(allowlistSuite.map((p) => `${p.id}: not-applicable`));
    expect(security[0]?.reason).toMatch(/no network allowlist/);
  });

  it('(a) an address filter (iptables from the allowlist) stops rebinding, NAT64 forms and other resolvers, not what an allowed proxy or front relays', async () => {
    const { security } = await runInLab('ral1', new ProcessBackend({ network: 'policy-filter' }), ALLOWLIST, allowlistSuite);
    const r = byId(security);
    for (const s of security) console.log(show(s));
    expectHeld(r, ['allowlist-rebinding', 'allowlist-nat64', 'allowlist-dns-resolvers']);
    expect(r.get('allowlist-proxy-connect')?.verdict, show(r.get('allowlist-proxy-connect'))).toBe('crossed');
    expect(
      outsideLine(r.get('allowlist-proxy-connect'), /^decoy:canary-http$/, /203\.0\.113\.66:80 GET \/sc[0-9a-f]+-proxy-denied-host from 198\.51\.100\.81/),
    ).toBe(true);
    expect(outsideLine(r.get('allowlist-proxy-connect'), /^decoy:metadata$/, /169\.254\.169\.254:80 .*sc[0-9a-f]+-proxy-metadata/)).toBe(true);
    expect(r.get('allowlist-host-sni')?.verdict, show(r.get('allowlist-host-sni'))).toBe('crossed');
    expect(outsideLine(r.get('allowlist-host-sni'), /^decoy:canary-http$/, /192\.0\.2\.10:80 GET \/sc[0-9a-f]+-host/)).toBe(true);
    expect(outsideLine(r.get('allowlist-host-sni'), /^decoy:catch-all-tcp$/, /192\.0\.2\.10:443 TLS ClientHello sni=sc[0-9a-f]+-sni\./)).toBe(true);
  });

  it('(a2) an address filter under an allowlist that names no proxy or front holds every bypass, proxies and fronting included', async () => {
    const { security } = await runInLab('ral4', new ProcessBackend({ network: 'policy-filter' }), NO_FRONT, allowlistSuite);
    const r = byId(security);
    for (const s of security) console.log(show(s));
    expectHeld(
      r,
      allowlistSuite.map((p) => p.id),
    );
    // The front was asked and refused by the filter: nothing of this run's marks reached it or went through it.
    for (const id of ['allowlist-proxy-connect', 'allowlist-host-sni'])
      expect(outsideLine(r.get(id), /^decoy:/, /from 198\.51\.100\.81/), show(r.get(id))).toBe(false);
  });

  // Each hole is a rule real filters carry: loopback allowed, the NAT64 prefix allowed, DNS to the resolver on both protocols.
  const HOLES: { hole: string; opens: string; line: [RegExp, RegExp] }[] = [
    { hole: '127.0.0.0/8', opens: 'allowlist-rebinding', line: [/^decoy:canary-http$/, /127\.0\.0\.1:80 .*sc[0-9a-f]+-rebind-loopback/] },
    { hole: '64:ff9b::/96', opens: 'allowlist-nat64', line: [/^decoy:metadata$/, /\[64:ff9b::a9fe:a9fe\]:80/] },
    { hole: 'tcp:192.0.2.53:53', opens: 'allowlist-dns-resolvers', line: [/^decoy:dns$/, /192\.0\.2\.53:53 A\? sc[0-9a-f]+-dnstcp-allowed/] },
  ];
  const filtered = ['allowlist-rebinding', 'allowlist-nat64', 'allowlist-dns-resolvers'];
  it.each(HOLES)(
    '(a3) the address filter with one hole ($hole) crosses exactly $opens, with its decoy line; the other filtered bypasses hold',
    async ({ hole, opens, line }) => {
      const backend = new ProcessBackend({ network: 'policy-filter', filterHoles: [hole] });
      const { security } = await runInLab(
        `ral5${HOLES.findIndex((h) => h.hole === hole)}`,
        backend,
        ALLOWLIST,
        allowlistSuite.filter((p) => filtered.includes(p.id)),
      );
      const r = byId(security);
      for (const s of security) console.log(show(s));
      expect(r.get(opens)?.verdict, show(r.get(opens))).toBe('crossed');
      expect(outsideLine(r.get(opens), ...line), show(r.get(opens))).toBe(true);
      expectHeld(
        r,
        filtered.filter((id) => id !== opens),
      );
    },
  );

  it('(b) on the unsandboxed control every bypass is crossed, each with a decoy line', async () => {
    const watch = await startHostLeakWatch(DIALLED);
    const { security } = await runInLab('ral2', new ProcessBackend(), ALLOWLIST, allowlistSuite);
    await watch.proveLive();
    const leak = await watch.stop();
    expect(leak.leaks).toEqual([]);
    expect(leak.controlSeen).toBeGreaterThan(0);
    const r = byId(security);
    for (const s of security) console.log(show(s));
    expect(security.filter((s) => s.verdict !== 'crossed').map(show)).toEqual([]);
    expect(outsideLine(r.get('allowlist-rebinding'), /^decoy:metadata$/, /169\.254\.169\.254:80 .*sc[0-9a-f]+-rebind-metadata/)).toBe(true);
    expect(outsideLine(r.get('allowlist-rebinding'), /^decoy:canary-http$/, /127\.0\.0\.1:80 .*sc[0-9a-f]+-rebind-loopback/)).toBe(true);
    expect(outsideLine(r.get('allowlist-nat64'), /^decoy:metadata$/, /\[64:ff9b::a9fe:a9fe\]:80/)).toBe(true);
    expect(outsideLine(r.get('allowlist-dns-resolvers'), /^decoy:dns$/, /192\.0\.2\.53:53 A\? sc[0-9a-f]+-dnstcp-allowed/)).toBe(true);
    expect(outsideLine(r.get('allowlist-dns-resolvers'), /^(decoy:dns|packet-witness)$/, /198\.51\.100\.53/)).toBe(true);
  });

  it('(c) srt with allowedDomains naming the lab allowed names: which bypasses its proxies stop and which cross', async () => {
    const settings = { ...SRT_SETTINGS, network: { allowedDomains: Object.values(ALLOWLIST_NAMES), deniedDomains: [] } };
    const def = srtPreset('srt-allow-lab', "srt allowing the lab's allowed names", settings, ['network.egress'], {});
    const missing = await missingRequirements(def);
    if (missing.length > 0) {
      console.log(`srt not installed (${missing.map((m) => m.binary).join(', ')}): ${def.install}`);
      return;
    }
    const { raw, configDir } = await def.config();
    const backend = new PresetBackend(def, await commandRuntime(parseCommandConfig(raw, 'srt-allow-lab'), 'srt-allow-lab', configDir));
    const watch = await startHostLeakWatch(DIALLED);
    const { security } = await runInLab('ral3', backend, ALLOWLIST, allowlistSuite);
    await watch.proveLive();
    const leak = await watch.stop();
    expect(leak.leaks).toEqual([]);
    const r = byId(security);
    for (const s of security) console.log(show(s));
    // srt's resolved-address guard refuses an allowed name answering loopback, link-local or an IPv6 form carrying
    // 169.254.169.254, and its proxies refuse IP literals and resolvers that are not allowed by name.
    expectHeld(r, ['allowlist-rebinding', 'allowlist-nat64', 'allowlist-dns-resolvers']);
    // What it cannot stop: an allowed name whose host relays. CONNECT to the denied host through srt itself is refused;
    // the crossing is the lab front, reached by its allowed name, asked to CONNECT onward (its relay source is the peer).
    const proxy = r.get('allowlist-proxy-connect');
    expect(proxy?.verdict, show(proxy)).toBe('crossed');
    expect(outsideLine(proxy, /^decoy:canary-http$/, /203\.0\.113\.66:80 GET \/sc[0-9a-f]+-chained-denied-host from 198\.51\.100\.81/)).toBe(true);
    expect(outsideLine(proxy, /^decoy:metadata$/, /169\.254\.169\.254:80 GET \/sc[0-9a-f]+-chained-metadata from 198\.51\.100\.81/)).toBe(true);
    expect(outsideLine(proxy, /^decoy:/, /-proxy-(denied-host|metadata)/)).toBe(false);
    // Domain fronting through the allowed front: Host and SNI carry the denied name; srt tunnels the bytes unread.
    const fronting = r.get('allowlist-host-sni');
    expect(fronting?.verdict, show(fronting)).toBe('crossed');
    expect(outsideLine(fronting, /^decoy:canary-http$/, /192\.0\.2\.10:80 GET \/sc[0-9a-f]+-host from 198\.51\.100\.81/)).toBe(true);
    expect(outsideLine(fronting, /^decoy:catch-all-tcp$/, /192\.0\.2\.10:443 TLS ClientHello sni=sc[0-9a-f]+-sni\./)).toBe(true);
    // srt's own HTTP proxy goes where the URL says, whatever the Host header: neither mismatch reached the denied host.
    expect(outsideLine(fronting, /^decoy:/, /192\.0\.2\.10:\d+ .*mismatch/)).toBe(false);
  });
});
