/**
 * `--backend rpc:<command>`: the Python reference adapter (examples/rpc-python) passes the adapter's own
 * checks and carries the whole suite; the same adapter without its network control, and a scripted
 * adapter that hands the box its own environment, are caught crossing with outside evidence.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { RpcConnection } from '../../backends/rpc/connection.js';
import { CI_POLICY } from '../../model/policy.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';
import { writeFile } from 'node:fs/promises';

const PYTHON_ADAPTER = `rpc:python3 ${join(packageRoot(), 'examples', 'rpc-python', 'sandcheck_bwrap_adapter.py')}`;
const SCRIPTED = `rpc:${process.execPath} ${join(packageRoot(), 'test', 'fixtures', 'rpc', 'scripted-adapter.mjs')}`;
const skip = await bwrapSkipReason();

/** Whatever the reference adapter makes is named sandcheck-rpcpy-* (cgroups) and lives under /run/sandcheck/rpc-python. */
async function adapterLeftovers(): Promise<string[]> {
  const cgroups = (await readdir('/sys/fs/cgroup/memory').catch(() => [])).filter((n) => n.startsWith('sandcheck-rpcpy-'));
  const state = await readdir('/run/sandcheck/rpc-python').catch(() => []);
  return [...cgroups, ...state];
}

describe.skipIf(skip !== undefined)('rpc adapter protocol: the Python reference adapter wrapping the bwrap CLI', () => {
  it('passes sandcheck adapter check', async () => {
    const r = await sandcheck(['adapter', 'check', '--backend', PYTHON_ADAPTER, '--policy', 'ci']);
    expect(r.exitCode, r.all).toBe(0);
    expect(r.stdout).toMatch(/24 passed, 0 failed, 0 skipped/);
  }, 120_000);

  it('runs the whole suite: every claim held, what it does not claim run anyway and crossed (disk size, seccomp), every task case as expected, nothing left', async () => {
    const out = await tempOut();
    const r = await sandcheck(['run', '--backend', PYTHON_ADAPTER, '--policy', 'ci', '--out', out]);
    const { security, task } = await readCards(out);
    const by = (v: string): string[] =>
      security.results
        .filter((x) => x.verdict === v)
        .map((x) => x.id)
        .sort();
    expect(security.backend.name, r.all).toBe('rpc-python-bwrap');
    // Not claimed by the reference adapter (a sized workspace, a seccomp filter): run anyway, and what they do is seen.
    expect(by('crossed'), r.all).toEqual(['disk-fill', 'posture-seccomp']);
    expect(security.results.filter((x) => by('crossed').includes(x.id)).map((x) => x.claimed)).toEqual([false, false]);
    expect(by('inconclusive'), r.all).toEqual([]);
    expect(by('unenforced')).toEqual([]);
    expect(by('held').length).toBeGreaterThanOrEqual(38);
    for (const id of ['secret-decoy-env', 'metadata-ipv4', 'memory-bomb', 'fork-bomb', 'wall-clock-spin', 'identity-uid', 'survive-teardown', 'residue'])
      expect(by('held')).toContain(id);
    // The adapter's counters are its claim: memory and processes were judged on the host's own read of its cgroups.
    for (const id of ['memory-bomb', 'fork-bomb']) {
      const evidence = security.results.find((x) => x.id === id)?.evidence ?? [];
      expect(evidence.find((e) => e.witness === 'cgroup')?.where, id).toMatch(
        /^host: the cgroups of the box's program \(pid \d+: .*sandcheck-rpcpy-.*\), read by sandcheck$/,
      );
      expect(evidence.find((e) => e.witness === 'adapter-counters')?.detail, id).toMatch(/its claim, never evidence; the host read the cgroups itself$/);
    }
    expect(task.summary.unexpected + task.summary.error).toBe(0);
    expect(r.exitCode).toBe(1);
    expect(await adapterLeftovers()).toEqual([]);
  }, 600_000);

  it('without its network control (shareNetwork, egress still claimed) the network probes cross on the lab witness', async () => {
    const out = await tempOut();
    const cfg = join(out, 'weak.json');
    const claims = [
      'files.hostPaths',
      'identity.unprivileged',
      'identity.hostCredentials',
      'lifecycle.freshEnvironment',
      'lifecycle.destroyAfter',
      'resources.wallSeconds',
      'output.maxBytes',
      'network.egress',
    ];
    await writeFile(cfg, JSON.stringify({ shareNetwork: true, claims }));
    const r = await sandcheck([
      'run',
      '--backend',
      PYTHON_ADAPTER,
      '--backend-config',
      cfg,
      '--policy',
      'ci',
      '--out',
      out,
      '--only',
      'metadata-ipv4',
      'public-egress-ipv4',
      'dns-exfil',
      'secret-decoy-env',
    ]);
    const { security } = await readCards(out);
    const verdict = Object.fromEntries(security.results.map((x) => [x.id, x]));
    for (const id of ['metadata-ipv4', 'public-egress-ipv4', 'dns-exfil']) {
      expect(verdict[id]?.verdict, r.all).toBe('crossed');
      expect(verdict[id]?.evidence.some((e) => e.source === 'outside' && /^(decoy:|packet-witness)/.test(e.witness))).toBe(true);
    }
    // Only the network control was removed: the environment's credentials still stay out.
    expect(verdict['secret-decoy-env']?.verdict).toBe('held');
    expect(await adapterLeftovers()).toEqual([]);
  }, 300_000);
});

describe.skipIf(skip !== undefined)('rpc adapter protocol: the Python reference adapter after a SIGKILL', () => {
  it('the next adapter removes the environments of one that died without destroying them (its boxes died with it)', async () => {
    const argv = PYTHON_ADAPTER.slice('rpc:'.length).split(' ');
    const start = async (): Promise<RpcConnection> => {
      const conn = RpcConnection.start(argv, { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, cwd: packageRoot() });
      await conn.call('hello', { protocol: 1, options: null }, 30_000, z.unknown());
      return conn;
    };
    const create = async (conn: RpcConnection): Promise<string> =>
      (await conn.call('create', { policy: CI_POLICY, runId: 'rrpckill', lab: null }, 60_000, z.object({ envId: z.string() }))).envId;
    const first = await start();
    const dead = await create(first);
    expect(existsSync(`/run/sandcheck/rpc-python/${dead}`)).toBe(true);
    expect(existsSync(`/sys/fs/cgroup/memory/sandcheck-rpcpy-${dead}`)).toBe(true);
    process.kill(first.pid!, 'SIGKILL');
    for (let i = 0; i < 50 && existsSync(`/proc/${first.pid}`); i++) await sleep(50);
    await first.close(1000);
    expect(existsSync(`/run/sandcheck/rpc-python/${dead}`), 'a SIGKILLed adapter cannot clean up').toBe(true);
    const second = await start();
    try {
      const live = await create(second);
      expect(existsSync(`/run/sandcheck/rpc-python/${dead}`)).toBe(false);
      expect(existsSync(`/sys/fs/cgroup/memory/sandcheck-rpcpy-${dead}`)).toBe(false);
      await second.call('destroy', { envId: live }, 60_000, z.unknown());
    } finally {
      await second.close(10_000);
    }
    expect(await adapterLeftovers()).toEqual([]);
  }, 120_000);
});

describe('rpc adapter protocol: an adapter that hands the box its own environment', () => {
  it("is caught: the run's decoy credentials, which only the adapter process held, come out of the box", async () => {
    const out = await tempOut();
    const cfg = join(out, 'mode.json');
    await writeFile(cfg, JSON.stringify({ mode: 'leak-env' }));
    const r = await sandcheck([
      'run',
      '--backend',
      SCRIPTED,
      '--backend-config',
      cfg,
      '--skip-adapter-check',
      '--policy',
      'ci',
      '--out',
      out,
      '--only',
      'secret-decoy-env',
    ]);
    const { security } = await readCards(out);
    expect(security.results[0]?.verdict, r.all).toBe('crossed');
    expect(security.results[0]?.reason).toMatch(/decoy/);
  }, 120_000);
});
