import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { readBootIdSync } from '../../core/ownership-journal.js';
import { RESULTS_JOURNAL, recoverResultsJournal } from '../../harness/results-journal.js';
import { writeScorecards } from '../../reports/write-cards.js';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson, cgroupModeFrom, cleanLabel, collectEnvironment, policySha256 } from '../../harness/environment-facts.js';
import { EnvironmentSchema } from '../../model/environment.js';
import { SandcheckError } from '../../core/errors.js';
import { securityScorecard, taskScorecard } from '../../harness/scorecard-builder.js';
import { commandBackendTools, toolVersion } from '../../harness/tool-versions.js';
import { compareCards, comparisonMarkdown, comparisonText } from '../../reports/compare.js';
import { gateReport, GateReportSchema } from '../../reports/gate.js';
import { gateText } from '../../reports/gate-render.js';
import { validateScorecard } from '../../reports/validate.js';
import { FAST_POLICY } from '../helpers/fake-run.js';
import { fabricatedRun, secResult } from './gate-fixtures.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const mount = (point: string, fstype: string) => `30 23 0:26 / ${point} rw,nosuid - ${fstype} ${fstype} rw`;

describe('run environment', () => {
  it('cgroup mode from mountinfo: v2, hybrid, v1, unknown', () => {
    expect(cgroupModeFrom([mount('/sys/fs/cgroup', 'cgroup2')].join('\n'))).toBe('v2');
    expect(
      cgroupModeFrom([mount('/sys/fs/cgroup', 'tmpfs'), mount('/sys/fs/cgroup/memory', 'cgroup'), mount('/sys/fs/cgroup/unified', 'cgroup2')].join('\n')),
    ).toBe('hybrid');
    expect(cgroupModeFrom([mount('/sys/fs/cgroup', 'tmpfs'), mount('/sys/fs/cgroup/pids', 'cgroup')].join('\n'))).toBe('v1');
    expect(cgroupModeFrom(mount('/', 'ext4'))).toBe('unknown');
  });

  it('the policy hash does not depend on key order, and changes with any value', () => {
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(FAST_POLICY).reverse()))) as typeof FAST_POLICY;
    expect(canonicalJson(reordered)).toBe(canonicalJson(FAST_POLICY));
    expect(policySha256(reordered)).toBe(policySha256(FAST_POLICY));
    expect(policySha256({ ...FAST_POLICY, resources: { ...FAST_POLICY.resources, processes: FAST_POLICY.resources.processes + 1 } })).not.toBe(
      policySha256(FAST_POLICY),
    );
  });

  it('--label is cleaned and bounded; an empty one is a usage error', () => {
    expect(cleanLabel('  main \u001b[31mred\u001b[0m\nx')).toBe('main red\\x0ax');
    expect(cleanLabel('a'.repeat(1000))).toHaveLength(128);
    expect(() => cleanLabel('   ')).toThrow(SandcheckError);
  });

  it('a missing tool is recorded as missing, a present one with its version', async () => {
    expect(await toolVersion('sandcheck-no-such-tool')).toMatchObject({ tool: 'sandcheck-no-such-tool', status: 'missing' });
    expect(await toolVersion('python3')).toMatchObject({ status: 'ok', version: expect.stringMatching(/^Python 3\./) });
  });

  it("a command backend launcher of the user's own is hashed, never run", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-env-'));
    dirs.push(dir);
    const marker = join(dir, 'ran');
    await writeFile(join(dir, 'launch.sh'), `#!/bin/sh\ntouch ${marker}\n`);
    await chmod(join(dir, 'launch.sh'), 0o755);
    const tools = await commandBackendTools({ exec: { argv: ['./launch.sh', 'bwrap', '{argv...}'] } }, dir);
    expect(tools).toEqual([expect.objectContaining({ tool: 'launch.sh', status: 'ok', version: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) })]);
    expect(existsSync(marker)).toBe(false);
  });

  it('collects a schema-valid environment with the backend configuration and its hash; cards with and without it validate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-env-'));
    dirs.push(dir);
    const cfg = join(dir, 'bwrap.yaml');
    await writeFile(cfg, 'shareNetwork: false\n');
    // A built-in backend says what it applied (its own parse, defaults filled in); the file's text is not kept.
    const applied = { shareNetwork: false, seccomp: true };
    const backend = { appliedOptions: () => applied };
    const env = await collectEnvironment({
      policy: FAST_POLICY,
      backendName: 'bwrap',
      backendConfig: cfg,
      backendOptions: { shareNetwork: false },
      backend,
      label: 'head',
    });
    expect(EnvironmentSchema.parse(env)).toEqual(env);
    expect(env).toMatchObject({
      label: 'head',
      policySha256: policySha256(FAST_POLICY),
      backendConfig: {
        file: 'bwrap.yaml',
        bytes: 20,
        sha256: createHash('sha256').update('shareNetwork: false\n').digest('hex'),
        options: applied,
        optionsSha256: createHash('sha256').update('{"seccomp":true,"shareNetwork":false}').digest('hex'),
        checkedBy: 'sandcheck',
      },
    });
    expect(env.backendConfig).not.toHaveProperty('content');
    // An adapter that cannot say what it applied: the options it was handed, marked as the adapter's to check.
    const handed = await collectEnvironment({
      policy: FAST_POLICY,
      backendName: './adapter.mjs',
      backendConfig: cfg,
      backendOptions: { shareNetwork: false },
      backend: {},
    });
    expect(handed.backendConfig).toMatchObject({ options: { shareNetwork: false }, checkedBy: 'adapter' });
    expect(env.tools.map((t) => t.tool)).toEqual(expect.arrayContaining(['bwrap', 'dockerd', 'runsc', 'podman']));
    const facts = { name: 'bwrap', description: 'x', isolation: 'sandbox' as const, enforces: [] };
    const meta = { runId: 'r1', startedAt: new Date(0), finishedAt: new Date(0), interrupted: false };
    for (const m of [meta, { ...meta, environment: env }]) {
      expect(validateScorecard('security', securityScorecard(facts, FAST_POLICY, m, [])).valid).toBe(true);
      expect(validateScorecard('task', taskScorecard(facts, FAST_POLICY, m, [])).valid).toBe(true);
    }
    const bad = securityScorecard(facts, FAST_POLICY, { ...meta, environment: { ...env, policySha256: 'nothex' } }, []);
    expect(validateScorecard('security', bad).valid).toBe(false);
  });
});

describe('recovery keeps the environment', () => {
  it('a run journal whose start line holds the environment and the watched daemons recovers into cards that carry them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-env-'));
    dirs.push(dir);
    const environment = await collectEnvironment({ policy: FAST_POLICY, backendName: 'fake', label: 'nightly' });
    const start = {
      type: 'start',
      runId: 'rkilled002',
      pid: spawnSync('true').pid ?? 999_999,
      startTime: 1,
      bootId: readBootIdSync(),
      startedAt: new Date().toISOString(),
      backend: { name: 'fake', description: 'x', isolation: 'sandbox', enforces: [] },
      policy: FAST_POLICY,
      environment,
      watchedDaemons: [{ socket: '/run/docker.sock', apiVersion: '1.47' }],
    };
    appendFileSync(join(dir, RESULTS_JOURNAL), `${JSON.stringify(start)}\n`);
    await recoverResultsJournal(dir, writeScorecards);
    const card = JSON.parse(readFileSync(join(dir, 'security.json'), 'utf8')) as { environment?: unknown; run: { watchedDaemons?: unknown } };
    expect(validateScorecard('security', card).valid).toBe(true);
    expect(card.environment).toEqual(environment);
    expect(card.run.watchedDaemons).toEqual(start.watchedDaemons);
  });
});

describe('compare: labels and policy differences', () => {
  const withEnv = (run: ReturnType<typeof fabricatedRun>, label: string | undefined, processes: number) => {
    const policy = { ...FAST_POLICY, resources: { ...FAST_POLICY.resources, processes } };
    const environment = {
      sandcheckVersion: '0',
      node: 'v20',
      kernel: 'k',
      cgroupMode: 'v2' as const,
      policySha256: policySha256(policy),
      tools: [],
      ...(label ? { label } : {}),
    };
    return { security: { ...run.security, policy, environment }, task: { ...run.task, policy, environment } };
  };

  it('two runs of one backend are told apart by their labels; the differing policy field is named', () => {
    const base = withEnv(fabricatedRun('a', [secResult('fork-bomb', 'held')]), 'base', 64);
    const head = withEnv(fabricatedRun('b', [secResult('fork-bomb', 'crossed')]), 'head', 100000);
    const c = compareCards([base, head]);
    expect(c.backends).toEqual(['bwrap [base]', 'bwrap [head]']);
    expect(c.policyDiffs).toEqual([{ field: 'resources.processes', values: ['64', '100000'] }]);
    const text = comparisonText(c);
    expect(text).toMatch(/probe\s+bwrap \[base\]\s+bwrap \[head\]/);
    expect(text).toContain('policy differs in 1 field(s): resources.processes');
    expect(text).toContain('bwrap [base]=64  bwrap [head]=100000');
    expect(comparisonMarkdown(c)).toMatch(/\| resources\.processes \| `64` \| `100000` \|/);
  });

  it('the gate (compare --base/--head) shows the labels and names the policy field that changed', () => {
    const base = { dir: 'a', ...withEnv(fabricatedRun('a', [secResult('fork-bomb', 'held')]), 'main', 64) };
    const head = { dir: 'b', ...withEnv(fabricatedRun('b', [secResult('fork-bomb', 'crossed')]), 'pr-42', 100000) };
    const g = gateReport(base, head, [], '2026-01-01');
    expect(GateReportSchema.parse(g)).toEqual(g);
    expect(g.policyDifferences).toEqual([{ field: 'resources.processes', base: '64', head: '100000' }]);
    const text = gateText(g);
    expect(text).toContain('base bwrap [main]');
    expect(text).toContain('head bwrap [pr-42]');
    expect(text).toContain('policy differs in 1 field(s): resources.processes 64 → 100000');
  });

  it('a label cannot break the Markdown table', () => {
    const c = compareCards([
      withEnv(fabricatedRun('a', [secResult('fork-bomb', 'held')]), 'a|b', 64),
      withEnv(fabricatedRun('b', [secResult('fork-bomb', 'held')]), 'c', 64),
    ]);
    expect(comparisonMarkdown(c)).toContain('| probe | bwrap [a\\|b] | bwrap [c] |');
  });

  it('unlabelled runs of one backend get numbered columns; one policy is said to be the same', () => {
    const a = fabricatedRun('a', [secResult('fork-bomb', 'held')]);
    const c = compareCards([a, a]);
    expect(c.backends).toEqual(['bwrap #1', 'bwrap #2']);
    expect(c.policyDiffs).toEqual([]);
    expect(comparisonText(c)).toContain('policy: the same in every column');
  });
});
