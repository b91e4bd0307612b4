import { readdir, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY, REFERENCE_POLICY, type Policy } from '../../model/policy.js';
import { cpuQuota } from '../../probes/cpu-quota/probe.js';
import { hostUntestableEscapes } from '../helpers/host-facts.js';
import { averageCorrected } from '../../tasks/average-corrected/probe.js';
import type { ProbeSpec, SecurityProbe } from '../../model/probe.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import { securitySuite, taskSuite } from '../../suites/index.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';

const fixture = (name: string): string => join(packageRoot(), 'test', 'fixtures', 'payloads', name);

async function freeDisk(): Promise<number> {
  const s = await statfs(tmpdir());
  return s.bavail * s.bsize;
}

async function run(probes: ProbeSpec[], runId: string, policy: Policy = CI_POLICY) {
  const ctx = await openRunContext(runId);
  try {
    return await new Runner({ backend: new ProcessBackend(), policy, probes, run: ctx, concurrency: 3 }).run();
  } finally {
    await ctx.dispose();
  }
}

describe('process backend (the unsandboxed control)', () => {
  it('every skeleton security probe is crossed with outside evidence; task cases come out as expected', async () => {
    const diskBefore = await freeDisk();
    // Network probes need a lab (test/integration/network-lab.test.ts); the export probes judge the
    // harness's exporter, not the backend (test/integration/export-stage.test.ts).
    // cpu-quota cannot cross where the policy's cpus reach the host's cores (its own test below uses 0.1).
    // kernel-identity reports a fact ci does not require (not-applicable); its crossing under a strict policy is in posture-local.test.ts.
    // Escapes this host cannot offer any box are not-applicable here (their crossings: escapes-local.test.ts, on a loop disk).
    const untestable = hostUntestableEscapes();
    const local = securitySuite.filter(
      (p) => p.category !== 'network' && p.enforcedBy !== 'exporter' && p.id !== 'cpu-quota' && p.id !== 'kernel-identity' && !untestable.has(p.id),
    );
    const { security, task } = await run([...local, ...taskSuite], 'rproc1');
    // A run against no sandbox at all leaves the machine healthy: disk back, nothing of the run left.
    expect(Math.abs((await freeDisk()) - diskBefore)).toBeLessThan(200 * 2 ** 20);
    expect(await findProcessesWithEnvMarker('SANDCHECK_RUN', 'rproc1')).toEqual([]);
    expect((await readdir(tmpdir())).filter((f) => f.startsWith('sandcheck-rproc1-') || f.startsWith('sandcheck-residue-'))).toEqual([]);
    const notCrossed = security.filter((r) => r.verdict !== 'crossed').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);
    expect(notCrossed).toEqual([]);
    expect(security).toHaveLength(local.length);
    for (const r of security)
      expect(
        r.evidence.some((e) => e.source === 'outside'),
        r.id,
      ).toBe(true);
    const byId = new Map(security.map((r) => [r.id, r]));
    expect(byId.get('wall-clock-spin')?.observation?.killedBy).toBe('harness-deadline');
    expect(byId.get('wall-clock-sleep')?.observation?.killedBy).toBe('harness-deadline');
    expect(byId.get('stdout-flood')?.observation?.killedBy).toBe('harness-output-ceiling');
    expect(byId.get('secret-decoy-file')?.evidence.some((e) => e.witness === 'canary-scan')).toBe(true);
    expect(byId.get('identity-uid')?.observation?.hostProcesses?.[0]?.effectiveUid).toBe(0);
    expect(byId.get('fork-bomb')?.observation?.hostProcessCountMax).toBeGreaterThan(CI_POLICY.resources.processes);
    expect(byId.get('memory-bomb')?.reason).toMatch(/past the 512 MiB limit/);
    expect(byId.get('daemon-socket')?.evidence.find((e) => e.witness === 'decoy-socket')?.source).toBe('outside');
    // Every legitimate case accepted and every counterexample rejected, each with its predicate's reason.
    expect(task.filter((t) => t.outcome !== 'as-expected').map((t) => `${t.id}: ${t.reason}`)).toEqual([]);
    expect(task.filter((t) => t.expected === 'accept').every((t) => t.verdict === 'accepted' && t.reproducible === true)).toBe(true);
    expect(task.filter((t) => t.expected === 'reject').every((t) => t.verdict === 'rejected' && t.reason.length > 0)).toBe(true);
    // No report may carry a host temp path.
    expect(JSON.stringify(security).includes('sandcheck-rproc1-'), 'a host temp path leaked into the report').toBe(false);
  });

  it('the correction loop on real processes: accepted on attempt 3 under the reference policy, rejected with 1 correction', async () => {
    const ctx = await openRunContext('rproc5');
    try {
      const runWith = (corrections: number) =>
        new Runner({
          backend: new ProcessBackend(),
          policy: { ...REFERENCE_POLICY, attempts: { ...REFERENCE_POLICY.attempts, corrections } },
          probes: [averageCorrected],
          run: ctx,
        }).run();
      const ref = (await runWith(3)).task[0];
      expect(ref).toMatchObject({ verdict: 'accepted', outcome: 'as-expected' });
      expect(ref?.attempts.map((a) => [a.attempt, a.verdict, a.exitCode])).toEqual([
        [1, 'rejected', 1],
        [2, 'rejected', 0],
        [3, 'accepted', 0],
      ]);
      // (1 + 3 corrections) × 3 inputs (the visible one and two hidden) × 30 s + 12 s queue/startup.
      expect(ref?.budget.limitMs).toBe(372_000);
      const strict = (await runWith(1)).task[0];
      expect(strict).toMatchObject({ verdict: 'rejected', outcome: 'unexpected' });
      expect(strict?.reason).toMatch(/attempt budget exhausted/);
    } finally {
      await ctx.dispose();
    }
  });

  it('cpu-quota is crossed on the control under a 0.1-cpu policy, from CPU time the host counted (a measurement-only cpuacct group)', async () => {
    const { security } = await run([cpuQuota], 'rproc5', { ...CI_POLICY, resources: { ...CI_POLICY.resources, cpus: 0.1 } });
    expect(security[0]?.verdict, security[0]?.reason).toBe('crossed');
    expect(security[0]?.observation?.resources?.source).toMatch(/cpuacct/);
    expect((await readdir('/sys/fs/cgroup/cpuacct').catch(() => [] as string[])).filter((d) => d.includes('rproc5'))).toEqual([]);
  });

  it('a payload that cannot start (syntax error, missing interpreter) is inconclusive, never held', async () => {
    const base = { ...secretDecoyEnv };
    const syntax: SecurityProbe = { ...base, id: 'syntax-error', payload: fixture('syntax-error') };
    const noInterpreter: SecurityProbe = { ...base, id: 'no-interpreter', interpreter: 'python3-not-installed-here' };
    const { security } = await run([syntax, noInterpreter], 'rproc2');
    expect(security.map((r) => [r.id, r.verdict])).toEqual([
      ['syntax-error', 'inconclusive'],
      ['no-interpreter', 'inconclusive'],
    ]);
    expect(security[1]?.reason).toMatch(/could not start|did not run/);
  });

  it('a payload that prints held, PASS and a JUnit fragment changes no verdict', async () => {
    const liar: SecurityProbe = { ...secretDecoyEnv, id: 'liar', payload: fixture('liar'), args: () => ({ leak: true }) };
    const quietLiar: SecurityProbe = { ...secretDecoyEnv, id: 'quiet-liar', payload: fixture('liar'), args: () => ({ leak: false }) };
    const { security } = await run([liar, quietLiar], 'rproc3');
    expect(security[0]?.verdict).toBe('crossed');
    // Without a leak the claim is recorded as inside evidence only; the verdict rests on the canary scan.
    expect(security[1]?.verdict).toBe('held');
    expect(security[1]?.evidence.find((e) => e.source === 'inside')?.detail).toContain('PASS');
    expect(security[1]?.evidence.find((e) => e.witness === 'canary-scan')?.source).toBe('outside');
  });

  it('kills the whole process group at the deadline, including a child that keeps the pipe open', async () => {
    const spawnChild: SecurityProbe = {
      ...secretDecoyEnv,
      id: 'spawner',
      payload: fixture('spawner'),
      judge: () => ({ verdict: 'held', reason: 'test', evidence: [] }),
    };
    const started = Date.now();
    const { security } = await run([spawnChild], 'rproc4');
    expect(security[0]?.observation?.killedBy).toBe('harness-deadline');
    expect(Date.now() - started).toBeLessThan(CI_POLICY.resources.wallSeconds * 1000 + 6000);
    expect(await findProcessesWithEnvMarker('SANDCHECK_RUN', 'rproc4')).toEqual([]);
  });
});
