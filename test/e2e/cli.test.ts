import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { findProcessesWithEnvMarker } from '../../lab/process-scan.js';
import { validateScorecard } from '../../reports/validate.js';
import { packageRoot } from '../../core/paths.js';
import { CI_POLICY } from '../../model/policy.js';
import { securitySuite, taskSuite } from '../../suites/index.js';
import { CREDENTIAL_PATHS, hostPreconditionFor } from '../../probes/host-credential-paths/judge.js';
import { hostUntestableEscapes } from '../helpers/host-facts.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

async function peakRss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

const isRoot = process.getuid?.() === 0;

describe('sandcheck CLI', () => {
  it('run --backend process --policy ci: exit 1, both scorecards and both JUnit files, all crossed, tasks as expected', async () => {
    const out = await tempOut();
    const res = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--out', out]);
    expect(res.exitCode, res.all).toBe(1);
    expect(res.all).toContain('isolates NOTHING');
    // The export probes test the harness's own reference exporter (held everywhere); without root
    // there is no lab and the network probes are not applicable.
    const byExporter = securitySuite.filter((p) => p.enforcedBy === 'exporter').length;
    const network = isRoot ? 0 : securitySuite.filter((p) => p.category === 'network').length;
    // cpu-quota cannot be tested where the policy's 2 cpus reach the host's cores (not applicable here).
    const cpu = availableParallelism() <= CI_POLICY.resources.cpus ? 1 : 0;
    // Facts ci does not require, and escapes this host itself cannot offer (no module support, a disk closed to root).
    // host-credential-paths: a harness that is not root can open none of the host's credential files to compare with.
    const hostNa = new Set([
      'kernel-identity',
      ...hostUntestableEscapes(),
      ...(hostPreconditionFor('/', CREDENTIAL_PATHS) === undefined ? [] : ['host-credential-paths']),
    ]);
    const na = network + cpu + hostNa.size;
    expect(res.stdout).toMatch(
      new RegExp(`security: ${byExporter} held, ${securitySuite.length - byExporter - na} crossed, 0 unenforced, 0 inconclusive, ${na} not applicable`),
    );
    expect(res.stdout).toMatch(new RegExp(`task: ${taskSuite.length} as expected, 0 unexpected`));
    const { security, task } = await readCards(out);
    expect(validateScorecard('security', security)).toMatchObject({ valid: true });
    expect(validateScorecard('task', task)).toMatchObject({ valid: true });
    const exporterIds = new Set(securitySuite.filter((p) => p.enforcedBy === 'exporter').map((p) => p.id));
    const expected = (r: { id: string; category: string }) =>
      exporterIds.has(r.id)
        ? 'held'
        : (!isRoot && r.category === 'network') || (cpu === 1 && r.id === 'cpu-quota') || hostNa.has(r.id)
          ? 'not-applicable'
          : 'crossed';
    expect(security.results.filter((r) => r.verdict !== expected(r)).map((r) => `${r.id}: ${r.verdict}`)).toEqual([]);
    expect(task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    const corrected = task.results.find((r) => r.id === 'average-corrected');
    expect(corrected?.attempts.map((a) => a.verdict)).toEqual(['rejected', 'rejected', 'accepted']);
    expect(task.results.filter((r) => r.verdict === 'accepted').every((r) => r.reproducible === true)).toBe(true);
    for (const f of ['security.junit.xml', 'task.junit.xml']) {
      expect(XMLValidator.validate(await readFile(join(out, f), 'utf8')), f).toBe(true);
    }
    // A bound on the whole run's peak (three 64 MiB floods and every canary form scanned as it streams): 192–216 MiB
    // measured here; issue 15's target (≤ 100 MB) is tracked by `npm run bench`, not asserted.
    expect(security.run.harness.maxRssBytes).toBeLessThan(256 * 1024 * 1024);
    expect(security.backend.coldStartMs?.samples).toBeGreaterThan(0);
    // No host path of the run in the reports (the decoy dir, sockets and workspaces live there).
    expect(JSON.stringify(security).includes(`sandcheck-${security.run.id}-`), 'a host temp path leaked into security.json').toBe(false);
    // An accepted task case's artifacts are exported unchanged, with their hashes in the report.
    const avg = task.results.find((r) => r.id === 'average-correct');
    const exported = await readFile(join(out, 'artifacts', 'average-correct', 'result.json'));
    expect(createHash('sha256').update(exported).digest('hex')).toBe(avg?.artifacts[0]?.sha256);
    expect(avg?.evidence.some((e) => e.witness === 'exporter' && e.detail.includes('byte-identical'))).toBe(true);
    // The whole suite: about 30 s on an idle 2-core machine, several times that on a busy one.
  }, 240_000);

  it('policy explain prints the worst-case end-to-end wait: 132 s for the reference policy', async () => {
    const res = await sandcheck(['policy', 'explain', '--policy', 'reference']);
    expect(res.exitCode).toBe(0);
    expect(res.stdout).toContain('(1 + 3) × 30 s + 12 s = 132 s');
    const json = await sandcheck(['policy', 'explain', '--policy', 'ci', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ worstCaseSeconds: 32, exportWorstCaseMb: 40 });
  });

  it('--tasks runs user task cases next to the built-in ones; a broken case directory is exit 3 naming file and field', async () => {
    const out = await tempOut();
    const fixtures = join(packageRoot(), 'test', 'fixtures', 'tasks');
    const ok = await sandcheck([
      'run',
      '--backend',
      'process',
      '--policy',
      'ci',
      '--tasks',
      join(fixtures, 'good'),
      '--only',
      'user-sum',
      'user-csv-report',
      '--out',
      out,
    ]);
    expect(ok.exitCode, ok.all).toBe(0);
    const { task } = await readCards(out);
    expect(task.results.map((r) => [r.id, r.verdict, r.outcome])).toEqual([
      ['user-sum', 'accepted', 'as-expected'],
      ['user-csv-report', 'accepted', 'as-expected'],
    ]);
    expect(task.results[1]?.attempts).toHaveLength(2);
    const bad = await sandcheck(['run', '--tasks', join(fixtures, 'bad'), '--out', out]);
    expect(bad.exitCode).toBe(3);
    expect(bad.stderr).toContain('broken.yaml: predicate.expected');
  });

  it('list shows every probe and task case with its policy item', async () => {
    const res = await sandcheck(['list', '--json']);
    expect(res.exitCode).toBe(0);
    const rows = JSON.parse(res.stdout) as { id: string; policyItem: string }[];
    expect(rows.map((r) => r.id)).toEqual(expect.arrayContaining(['secret-decoy-file', 'stdout-flood', 'average-correct', 'average-off-by-one']));
    expect(rows.every((r) => r.policyItem.length > 0)).toBe(true);
  });

  it('a bad policy file is exit 3 with the field path, and nothing runs', async () => {
    const out = await tempOut();
    const policy = join(out, 'policy.yaml');
    await writeFile(policy, 'extends: ci\nresources:\n  memoryMb: -1\n');
    const res = await sandcheck(['run', '--policy', policy, '--out', out]);
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain('resources.memoryMb: expected a positive integer, got -1');
    await expect(readFile(join(out, 'security.json'))).rejects.toThrow();
  });

  it('usage errors are exit 3 with a hint', async () => {
    const backend = await sandcheck(['run', '--backend', 'nope']);
    expect(backend.exitCode).toBe(3);
    expect(backend.stderr).toMatch(/BACKEND_UNKNOWN.*\n.*hint: .*bwrap.*docker-hardened.*gvisor.*process/);
    const probe = await sandcheck(['run', '--only', 'no-such-probe']);
    expect(probe.exitCode).toBe(3);
    expect(probe.stderr).toContain('sandcheck list');
    expect((await sandcheck(['run', '--concurrency', 'zero'])).exitCode).toBe(3);
    expect((await sandcheck(['frobnicate'])).exitCode).toBe(3);
  });

  it('keeps its own memory bounded while a payload floods 64 MiB', async () => {
    const out = await tempOut();
    const child = sandcheck(['run', '--backend', 'process', '--only', 'stdout-flood', '--policy', 'ci', '--out', out]);
    let peak = 0;
    const poll = setInterval(() => {
      if (child.pid) void peakRss(child.pid).then((v) => (peak = Math.max(peak, v)));
    }, 25);
    const res = await child;
    clearInterval(poll);
    expect(res.exitCode).toBe(1);
    const { security } = await readCards(out);
    expect(security.results[0]?.verdict).toBe('crossed');
    expect(security.results[0]?.observation?.stdout.bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(200 * 1024 * 1024);
  });

  it('SIGINT stops every live environment, leaves no process of the run, and still writes reports marked interrupted', async () => {
    const out = await tempOut();
    const child = sandcheck([
      'run',
      '--backend',
      'process',
      '--only',
      'wall-clock-sleep',
      'wall-clock-spin',
      'secret-decoy-env',
      '--policy',
      'reference',
      '--concurrency',
      '2',
      '--out',
      out,
    ]);
    let seen = '';
    child.stderr?.on('data', (c: Buffer) => (seen += c.toString()));
    // Interrupt once both long probes are certainly running.
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (seen.includes('sandcheck run r')) {
          clearInterval(t);
          setTimeout(resolve, 1500);
        }
      }, 50);
    });
    const runId = /sandcheck run (r[0-9a-f]+)/.exec(seen)?.[1];
    expect(runId).toBeDefined();
    expect((await findProcessesWithEnvMarker('SANDCHECK_RUN', runId!)).length).toBeGreaterThan(0);
    child.kill('SIGINT');
    const res = await child;
    expect(res.exitCode).toBe(130);
    const { security } = await readCards(out);
    expect(security.run.interrupted).toBe(true);
    expect(security.results.map((r) => r.id)).toEqual(['wall-clock-sleep', 'wall-clock-spin', 'secret-decoy-env']);
    // Cause and order instead of a stopwatch: both long probes were stopped by the interrupt, before
    // their 30 s wall (the process control has no timer of its own), and the third never started.
    for (const id of ['wall-clock-sleep', 'wall-clock-spin']) {
      const r = security.results.find((x) => x.id === id);
      expect(r?.harnessError?.code, id).toBe('INTERRUPTED');
      expect(r?.observation?.killedBy, id).toBe('harness-interrupt');
    }
    expect(security.results.find((r) => r.id === 'secret-decoy-env')?.harnessError?.message).toMatch(/not run/);
    expect(await findProcessesWithEnvMarker('SANDCHECK_RUN', runId!)).toEqual([]);
  });
});
