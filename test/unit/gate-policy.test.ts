import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { REFERENCE_POLICY, type Policy } from '../../model/policy.js';
import type { Waiver } from '../../model/waiver.js';
import { policyLeaves } from '../../reports/compare.js';
import { gateReport, GateReportSchema, policyChanges, RULED_POLICY_FIELDS, type GateReport } from '../../reports/gate.js';
import { gateMarkdown, gateText, waiverLines } from '../../reports/gate-render.js';
import { FAST_POLICY } from '../helpers/fake-run.js';
import { backendConfigRecord, fabricatedRun, secResult, taskResult, withPolicy } from './gate-fixtures.js';

const TODAY = '2026-06-15';
const PROBES = [
  secResult('fork-bomb', 'held', { policyItem: 'resources.processes' }),
  secResult('identity-uid', 'held', { policyItem: 'identity.unprivileged' }),
];
const TASKS = [taskResult('average-correct', 'as-expected')];
const run = (dir: string, policy: Policy, opts: Parameters<typeof fabricatedRun>[3] = {}) => fabricatedRun(dir, PROBES, TASKS, { policy, ...opts });

const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
formats.default(ajv);
const validateJson = ajv.compile(JSON.parse(readFileSync(join(packageRoot(), 'reports', 'schema', 'gate-report.schema.json'), 'utf8')) as object);
/** Both the zod schema and the published JSON Schema (npm run schema) accept the report. */
function expectValid(report: GateReport): void {
  expect(GateReportSchema.safeParse(report).success).toBe(true);
  expect(validateJson(JSON.parse(JSON.stringify(report))), JSON.stringify(validateJson.errors)).toBe(true);
}

const rows = (g: GateReport, kind: string) =>
  g.changes.filter((c) => c.kind === kind && c.class !== 'unchanged').map((c) => `${c.id}:${c.base}>${c.head}:${c.class}`);

describe('the gate sees a loosened policy even when no verdict moved', () => {
  it('acceptance: wallSeconds 5 → 10 with every verdict the same fails the gate and names the field, before → after', () => {
    const base = run('base', withPolicy({ resources: { wallSeconds: 5 } }));
    const head = run('head', withPolicy({ resources: { wallSeconds: 10 } }));
    const g = gateReport(base, head, [], TODAY);
    expect(g.passed).toBe(false);
    expect(rows(g, 'security')).toEqual([]);
    expect(rows(g, 'policy')).toEqual(['resources.wallSeconds:5>10:regression']);
    expect(g.changes.find((c) => c.kind === 'policy')).toMatchObject({
      policyItem: 'resources.wallSeconds',
      reason: 'looser: raised: a program may run longer',
    });
    expect(g.summary).toMatchObject({ regressions: 1, policyLoosened: 1, claimsDropped: 0 });
    expectValid(g);
    const text = gateText(g);
    expect(text).toMatch(/REGRESSION\s+policy\s+resources\.wallSeconds: 5 → 10\n\s+looser: raised: a program may run longer/);
    expect(text).toContain('FAILED');
    expect(gateMarkdown(g)).toContain('| REGRESSION | policy | resources.wallSeconds | 5 | 10 | looser: raised: a program may run longer |');
  });

  it('acceptance: the same field tightened (10 → 5) is listed as an improvement and passes', () => {
    const g = gateReport(run('base', withPolicy({ resources: { wallSeconds: 10 } })), run('head', withPolicy({ resources: { wallSeconds: 5 } })), [], TODAY);
    expect(g.passed).toBe(true);
    expect(rows(g, 'policy')).toEqual(['resources.wallSeconds:10>5:improvement']);
    expect(gateText(g)).toMatch(/improvement\s+policy\s+resources\.wallSeconds: 10 → 5/);
  });

  it('processes 64 → 100000 fails on the policy alone, not only because a verdict happened to change', () => {
    const g = gateReport(run('base', withPolicy({ resources: { processes: 64 } })), run('head', withPolicy({ resources: { processes: 100_000 } })), [], TODAY);
    expect(g.passed).toBe(false);
    expect(rows(g, 'policy')).toEqual(['resources.processes:64>100000:regression']);
    // The raw difference line the side-by-side compare prints is kept.
    expect(gateText(g)).toContain('policy differs in 1 field(s): resources.processes 64 → 100000');
  });

  it('every field of the policy has a direction rule, except its name', () => {
    const withAllowMounts: Policy = { ...REFERENCE_POLICY, posture: { ...REFERENCE_POLICY.posture!, hostMounts: { allow: ['/srv'] } } };
    const leaves = [...policyLeaves(REFERENCE_POLICY).keys(), ...policyLeaves(withAllowMounts).keys()];
    const unruled = leaves.filter((leaf) => leaf !== 'name' && !RULED_POLICY_FIELDS.some((f) => leaf === f || leaf.startsWith(`${f}.`)));
    expect([...new Set(unruled)]).toEqual([]);
  });

  const higher = [
    'resources.cpus',
    'resources.memoryMb',
    'resources.wallSeconds',
    'resources.processes',
    'resources.diskMb',
    'resources.wallToleranceMs',
    'exports.maxFiles',
    'exports.maxFileMb',
    'exports.maxTotalMb',
    'output.maxBytes',
    'attempts.corrections',
    'attempts.queueStartupSeconds',
  ];
  it.each(higher)('%s: higher is looser, lower is tighter', (field) => {
    const [section, key] = field.split('.') as [keyof Policy, string];
    const at = (n: number) => withPolicy({ [section]: { [key]: n } } as Parameters<typeof withPolicy>[0], REFERENCE_POLICY);
    const up = policyChanges(at(3), at(4));
    expect(up).toMatchObject([{ field, direction: 'looser', base: '3', head: '4' }]);
    expect(policyChanges(at(4), at(3))).toMatchObject([{ field, direction: 'tighter' }]);
  });

  const switches: [string, Partial<Policy>, Partial<Policy>][] = [
    ['files.readOnlyInput', { files: { ...REFERENCE_POLICY.files, readOnlyInput: true } }, { files: { ...REFERENCE_POLICY.files, readOnlyInput: false } }],
    [
      'identity.unprivileged',
      { identity: { ...REFERENCE_POLICY.identity, unprivileged: true } },
      { identity: { ...REFERENCE_POLICY.identity, unprivileged: false } },
    ],
    [
      'lifecycle.freshEnvironment',
      { lifecycle: { ...REFERENCE_POLICY.lifecycle, freshEnvironment: true } },
      { lifecycle: { ...REFERENCE_POLICY.lifecycle, freshEnvironment: false } },
    ],
    [
      'lifecycle.destroyAfter',
      { lifecycle: { ...REFERENCE_POLICY.lifecycle, destroyAfter: true } },
      { lifecycle: { ...REFERENCE_POLICY.lifecycle, destroyAfter: false } },
    ],
    ['isolation.separateKernel', { isolation: { separateKernel: true } }, { isolation: { separateKernel: false } }],
  ];
  it.each(switches)('%s: a control switched off is looser and names the item no longer required', (field, on, off) => {
    const [strict, lax] = [
      { ...REFERENCE_POLICY, ...on },
      { ...REFERENCE_POLICY, ...off },
    ];
    expect(policyChanges(strict, lax)).toMatchObject([{ field, item: field, direction: 'looser', base: 'true', head: 'false' }]);
    expect(policyChanges(strict, lax)[0]?.why).toContain(`${field} is no longer required`);
    expect(policyChanges(lax, strict)).toMatchObject([{ field, direction: 'tighter' }]);
  });

  it('network: off → allowlist is looser; an added destination is looser, a removed one tighter; entries count only with allowlist', () => {
    const net = (mode: 'off' | 'allowlist', allow: string[]): Policy => ({ ...REFERENCE_POLICY, network: { mode, allow } });
    expect(policyChanges(net('off', []), net('allowlist', []))).toMatchObject([{ field: 'network.mode', item: 'network.egress', direction: 'looser' }]);
    expect(policyChanges(net('allowlist', []), net('off', []))).toMatchObject([{ field: 'network.mode', direction: 'tighter' }]);
    const added = policyChanges(net('allowlist', ['tcp:192.0.2.1:443']), net('allowlist', ['tcp:192.0.2.1:443', 'udp:198.51.100.0/24:53']));
    expect(added).toMatchObject([{ field: 'network.allow', item: 'network.egress', direction: 'looser' }]);
    expect(added[0]?.why).toContain('added udp:198.51.100.0/24:53');
    // A swap is looser too: something the base refused is now allowed.
    expect(policyChanges(net('allowlist', ['tcp:192.0.2.1:443']), net('allowlist', ['tcp:192.0.2.2:443']))[0]?.direction).toBe('looser');
    expect(policyChanges(net('allowlist', ['tcp:192.0.2.1:443', '192.0.2.9']), net('allowlist', ['tcp:192.0.2.1:443']))[0]?.direction).toBe('tighter');
    // The same rule written another way (an old host:port means tcp) is not a change of direction.
    expect(policyChanges(net('allowlist', ['192.0.2.1:443']), net('allowlist', ['tcp:192.0.2.1:443']))[0]?.direction).toBe('changed');
    // With the network off, an entry allows nothing.
    expect(policyChanges(net('off', []), net('off', ['192.0.2.1']))[0]?.direction).toBe('changed');
  });

  it('posture: each setting relaxed is looser, and dropping posture altogether drops every item it required', () => {
    const posture = REFERENCE_POLICY.posture!;
    const p = (change: Partial<typeof posture>): Policy => ({ ...REFERENCE_POLICY, posture: { ...posture, ...change } });
    expect(policyChanges(REFERENCE_POLICY, p({ seccomp: 'any' }))).toMatchObject([{ field: 'posture.seccomp', direction: 'looser' }]);
    expect(policyChanges(REFERENCE_POLICY, p({ capabilityBounding: 'any' }))).toMatchObject([{ field: 'posture.capabilityBounding', direction: 'looser' }]);
    expect(policyChanges(REFERENCE_POLICY, p({ devices: 'any' }))).toMatchObject([{ field: 'posture.devices', direction: 'looser' }]);
    expect(policyChanges(REFERENCE_POLICY, p({ namespaces: ['mnt', 'pid'] }))).toMatchObject([{ field: 'posture.namespaces', direction: 'looser' }]);
    expect(policyChanges(REFERENCE_POLICY, p({ namespaces: [...posture.namespaces, 'user'] }))).toMatchObject([{ direction: 'tighter' }]);
    expect(policyChanges(REFERENCE_POLICY, p({ hostMounts: { allow: ['/srv'] } }))).toMatchObject([{ field: 'posture.hostMounts', direction: 'looser' }]);
    expect(policyChanges(p({ hostMounts: { allow: ['/srv'] } }), p({ hostMounts: { allow: ['/srv', '/var/lib/x'] } }))).toMatchObject([
      { direction: 'looser' },
    ]);
    expect(policyChanges(p({ hostMounts: { allow: ['/srv'] } }), p({ hostMounts: 'any' }))).toMatchObject([{ direction: 'looser' }]);
    expect(policyChanges(p({ hostMounts: 'any' }), p({ hostMounts: 'none' }))).toMatchObject([{ direction: 'tighter' }]);

    const noPosture: Policy = { ...REFERENCE_POLICY };
    delete noPosture.posture;
    const dropped = policyChanges(REFERENCE_POLICY, noPosture);
    expect(dropped.map((c) => `${c.field}:${c.direction}`)).toEqual([
      'posture.capabilityBounding:looser',
      'posture.devices:looser',
      'posture.hostMounts:looser',
      'posture.namespaces:looser',
      'posture.seccomp:looser',
    ]);
    expect(dropped.find((c) => c.field === 'posture.seccomp')).toMatchObject({ base: '"required"', head: '"any" (not set)' });
    expect(dropped.every((c) => c.why.endsWith('is no longer required'))).toBe(true);
  });

  it('a name has no direction: listed as a change, not a regression', () => {
    const g = gateReport(run('base', FAST_POLICY), run('head', { ...FAST_POLICY, name: 'renamed' }), [], TODAY);
    expect(g.passed).toBe(true);
    expect(rows(g, 'policy')).toEqual(['name:"unit">"renamed":changed']);
  });

  it('a loosening and a tightening together: the loosening fails, both are listed', () => {
    const g = gateReport(
      run('base', withPolicy({ resources: { memoryMb: 512, processes: 64 } })),
      run('head', withPolicy({ resources: { memoryMb: 256, processes: 128 } })),
      [],
      TODAY,
    );
    expect(g.passed).toBe(false);
    expect(rows(g, 'policy').sort()).toEqual(['resources.memoryMb:512>256:improvement', 'resources.processes:64>128:regression']);
  });

  it('a waiver naming the field (or the policy item it sets) accepts the loosening until it expires', () => {
    const base = run('base', withPolicy({ resources: { wallSeconds: 5 } }));
    const head = run('head', withPolicy({ resources: { wallSeconds: 10 } }));
    const waiver = (probe: string, expires = '2026-12-31'): Waiver => ({ probe, reason: 'slow interpreter start', owner: 'alice', expires });
    for (const name of ['resources.wallSeconds']) {
      const g = gateReport(base, head, [waiver(name)], TODAY);
      expect(g.passed, name).toBe(true);
      expect(g.summary).toMatchObject({ regressions: 0, waived: 1, policyLoosened: 1 });
    }
    const tolerance = gateReport(
      run('base', withPolicy({ resources: { wallToleranceMs: 1000 } })),
      run('head', withPolicy({ resources: { wallToleranceMs: 5000 } })),
      [waiver('resources.wallSeconds')],
      TODAY,
    );
    expect(tolerance.passed).toBe(true);
    const expired = gateReport(base, head, [waiver('resources.wallSeconds', '2026-06-01')], TODAY);
    expect(expired.passed).toBe(false);
    expect(waiverLines(expired).join('\n')).toContain('waiver for resources.wallSeconds expired on 2026-06-01');
  });
});

describe('the backend configuration', () => {
  const pidsOn = backendConfigRecord('defaults.yaml', { limits: { memory: true, pids: true, cpu: true }, seccomp: true });
  const pidsOff = backendConfigRecord('no-pids.yaml', { limits: { memory: true, pids: false, cpu: true }, seccomp: true });
  const claims = ['resources.processes', 'identity.unprivileged'];

  it('acceptance: a config that drops a claim fails, names the item, and lists the option that changed, before → after', () => {
    const base = run('base', FAST_POLICY, { enforces: claims, backendConfig: pidsOn });
    const head = run('head', FAST_POLICY, { enforces: ['identity.unprivileged'], backendConfig: pidsOff });
    const g = gateReport(base, head, [], TODAY);
    expect(g.passed).toBe(false);
    expect(rows(g, 'claim')).toEqual(['resources.processes:claimed>not claimed:regression']);
    expect(g.summary).toMatchObject({ regressions: 1, claimsDropped: 1, changed: 1 });
    expect(g.backendConfig).toMatchObject({
      changed: true,
      optionsCompared: true,
      base: { file: 'defaults.yaml', optionsSha256: pidsOn.optionsSha256 },
      head: { file: 'no-pids.yaml', optionsSha256: pidsOff.optionsSha256 },
      options: [{ path: 'limits.pids', base: 'true', head: 'false' }],
    });
    const claim = g.changes.find((c) => c.kind === 'claim' && c.id === 'resources.processes');
    expect(claim?.reason).toMatch(
      /^bwrap no longer claims to enforce resources\.processes; backend config defaults\.yaml \(options [0-9a-f]{12}\) → no-pids\.yaml/,
    );
    expectValid(g);
    const text = gateText(g);
    expect(text).toMatch(/REGRESSION\s+claim\s+resources\.processes: claimed → not claimed/);
    expect(text).toMatch(
      /changed\s+config\s+backend-config: defaults\.yaml \(options [0-9a-f]{12}\) → no-pids\.yaml \(options [0-9a-f]{12}\)\n.*applied options differ: limits\.pids true → false\n\s+limits\.pids: true → false/,
    );
    const md = gateMarkdown(g);
    expect(md).toContain('### Backend configuration: defaults.yaml');
    expect(md).toContain('| limits.pids | true | false |');
  });

  it('a changed config that keeps every claim is listed and passes; one on one side only is listed without option paths', () => {
    const more = backendConfigRecord('more.yaml', { limits: { memory: true, pids: true, cpu: true }, seccomp: true, extraBinds: [] });
    const same = gateReport(
      run('base', FAST_POLICY, { enforces: claims, backendConfig: pidsOn }),
      run('head', FAST_POLICY, { enforces: claims, backendConfig: more }),
      [],
      TODAY,
    );
    expect(same.passed).toBe(true);
    expect(same.backendConfig.options).toEqual([{ path: 'extraBinds', base: '–', head: '[]' }]);
    expect(rows(same, 'config')).toHaveLength(1);
    const oneSide = gateReport(
      run('base', FAST_POLICY, { enforces: claims }),
      run('head', FAST_POLICY, { enforces: claims, backendConfig: pidsOff }),
      [],
      TODAY,
    );
    expect(oneSide.passed).toBe(true);
    expect(oneSide.backendConfig).toMatchObject({ changed: true, optionsCompared: false, base: null, options: [] });
    expect(oneSide.changes.find((c) => c.kind === 'config')).toMatchObject({ base: 'none (defaults)', class: 'changed' });
    const unchanged = gateReport(run('base', FAST_POLICY, { backendConfig: pidsOn }), run('head', FAST_POLICY, { backendConfig: pidsOn }), [], TODAY);
    expect(unchanged.backendConfig.changed).toBe(false);
    expect(rows(unchanged, 'config')).toEqual([]);
    expectValid(oneSide);
  });
});

describe('--fail-on and --exclude', () => {
  const low = (v: 'held' | 'crossed') => secResult('stderr-flood', v, { severity: 'low', category: 'resources', policyItem: 'output.maxBytes' });
  const high = (v: 'held' | 'crossed') => secResult('secret-decoy-file', v, { severity: 'high', category: 'files', policyItem: 'files.hostPaths' });
  const base = fabricatedRun('base', [low('held'), high('held')], TASKS);

  it('acceptance: --fail-on high ignores a low-severity crossing and fails on a high one', () => {
    const lowOnly = fabricatedRun('head', [low('crossed'), high('held')], TASKS);
    expect(gateReport(base, lowOnly, [], TODAY).passed).toBe(false); // default low: as before
    const g = gateReport(base, lowOnly, [], TODAY, { failOn: 'high' });
    expect(g.passed).toBe(true);
    expect(g.summary).toMatchObject({ regressions: 0, belowFailOn: 1 });
    expect(g.changes.find((c) => c.id === 'stderr-flood')).toMatchObject({ class: 'regression', severity: 'low', belowFailOn: true });
    expect(gateText(g)).toMatch(/regression \(below --fail-on\) security stderr-flood: held → crossed \(low\)/);
    expect(gateText(g)).toContain('fail on: security findings of severity high or above');
    expectValid(g);

    const both = gateReport(base, fabricatedRun('head', [low('crossed'), high('crossed')], TASKS), [], TODAY, { failOn: 'high' });
    expect(both.passed).toBe(false);
    expect(both.summary).toMatchObject({ regressions: 1, belowFailOn: 1 });
    expect(gateReport(base, fabricatedRun('head', [low('held'), high('crossed')], TASKS), [], TODAY, { failOn: 'critical' }).passed).toBe(true);
  });

  it('--fail-on never lets through a task regression, a dropped claim or a loosened policy', () => {
    const opts = { failOn: 'critical' } as const;
    expect(gateReport(base, fabricatedRun('head', [low('held'), high('held')], [taskResult('average-correct', 'unexpected')]), [], TODAY, opts).passed).toBe(
      false,
    );
    const claimed = fabricatedRun('base', [low('held')], [], { enforces: ['output.maxBytes'] });
    expect(gateReport(claimed, fabricatedRun('head', [low('held')], [], { enforces: [] }), [], TODAY, opts).passed).toBe(false);
    const loose = fabricatedRun('head', [low('held'), high('held')], TASKS, { policy: withPolicy({ output: { maxBytes: 1 << 30 } }) });
    expect(gateReport(base, loose, [], TODAY, opts).passed).toBe(false);
  });

  it('an expired waiver fails the gate only through a finding at or above --fail-on', () => {
    const head = fabricatedRun('head', [low('crossed'), high('held')], TASKS);
    const expired: Waiver = { probe: 'stderr-flood', reason: 'r', owner: 'o', expires: '2020-01-01' };
    expect(gateReport(base, head, [expired], TODAY).passed).toBe(false);
    const g = gateReport(base, head, [expired], TODAY, { failOn: 'medium' });
    expect(g.passed).toBe(true);
    expect(g.summary.expiredWaivers).toBe(0);
    expect(waiverLines(g).join('\n')).toContain('waiver for stderr-flood expired on 2020-01-01');
  });

  it('acceptance: --exclude of the regressed probe passes; by category or policy item too; the left-out ids are named', () => {
    const head = fabricatedRun('head', [low('held'), high('crossed')], TASKS);
    expect(gateReport(base, head, [], TODAY).passed).toBe(false);
    for (const pattern of ['secret-decoy-file', 'files', 'files.hostPaths']) {
      const g = gateReport(base, head, [], TODAY, { exclude: [pattern] });
      expect(g.passed, pattern).toBe(true);
      expect(g.excluded).toEqual([{ pattern, matched: ['secret-decoy-file'] }]);
      expect(g.changes.some((c) => c.id === 'secret-decoy-file')).toBe(false);
      expectValid(g);
    }
    // Another probe's crossing still fails; a pattern that matches nothing is a notice, never silent.
    const other = gateReport(base, fabricatedRun('head', [low('crossed'), high('crossed')], TASKS), [], TODAY, { exclude: ['files', 'netwrok'] });
    expect(other.passed).toBe(false);
    expect(other.changes.filter((c) => c.class === 'regression').map((c) => c.id)).toEqual(['stderr-flood']);
    expect(waiverLines(other)).toContain('--exclude netwrok matched no probe or task case in either run');
    expect(gateText(other)).toContain('excluded from the gate: files (1), netwrok (0)');
  });

  it('--exclude leaves probes out, not the policy or the claims: a loosened item still fails', () => {
    const claimed = fabricatedRun('base', [high('held')], [], { enforces: ['files.hostPaths'], policy: withPolicy({ resources: { diskMb: 100 } }) });
    const head = fabricatedRun('head', [high('crossed')], [], { enforces: [], policy: withPolicy({ resources: { diskMb: 200 } }) });
    const g = gateReport(claimed, head, [], TODAY, { exclude: ['files', 'resources.diskMb'] });
    expect(g.passed).toBe(false);
    expect(g.changes.filter((c) => c.class === 'regression').map((c) => `${c.kind}:${c.id}`)).toEqual(['policy:resources.diskMb', 'claim:files.hostPaths']);
  });
});
