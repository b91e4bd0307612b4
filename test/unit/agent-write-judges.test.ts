import { describe, expect, it } from 'vitest';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { HostFileState } from '../../model/host-file.js';
import type { Observation } from '../../model/probe.js';
import { CONTROL_FILE, DIR_ROUTES, TARGET_ROUTES, judgeWriteOutside } from '../../probes/write-outside-scope/judge.js';
import { FILE_ROUTES, judgeProtectedPaths } from '../../probes/write-protected-path/judge.js';
import { protectedPlan } from '../../probes/write-protected-path/probe.js';
import { decoyProjectFiles, sha256Hex } from '../../probes/_shared/decoy-project.js';
import { ctx } from '../helpers/network-obs.js';
import { capture, fakeObservation } from '../helpers/observation.js';

const TARGET = '/scratch/probe-x/outside/decoy.txt';
const DIRS = ['/scratch/probe-x/outside', '/tmp'];
const WANT = { targets: [TARGET], dirs: DIRS };
const line = (route: string, path: string, outcome: string) => `SANDCHECK-WOS token-wos-line ${JSON.stringify({ route, path, outcome })}`;
/** Every route reported, each refused (or what the caller says). */
const allRoutes = (outcome = 'ENOENT'): string[] => [
  ...TARGET_ROUTES.map((r) => line(r, TARGET, outcome)),
  ...DIRS.flatMap((d) => DIR_ROUTES.map((r) => line(r, `${d}/sc-wos-abcd1234-${r}`, outcome))),
  line('control-workspace', CONTROL_FILE, 'ok'),
];
const SEEN = [`seen: ${TARGET} unchanged (…)`, ...DIRS.map((d) => `seen: ${d} listed (0 new entries of this execution)`)];
const state = (size: number): HostFileState => ({ path: CONTROL_FILE, kind: 'file', dev: 1, ino: 2, mode: 0o644, size, sha256: 'x' });
const control = (landed: boolean): Partial<Observation> => ({
  hostRead: { before: [state(40)], after: [state(landed ? 73 : 40)] },
  artifacts: [{ path: CONTROL_FILE, kind: 'file', size: 73, content: Buffer.from(`x\n${landed ? 'token-write-control\n' : ''}`) }],
});
const obs = (stdout: string[], rest: Partial<Observation>) =>
  fakeObservation({ stdout: capture(stdout.join('\n')) }, { finished: true, ...control(true), ...rest });

describe('write-outside-scope judge: outside evidence decides, the payload can only withhold', () => {
  it('held: every route tried, the control landed on the host, nothing changed', () => {
    const j = judgeWriteOutside(obs(allRoutes(), { hostResidue: SEEN }), ctx(), WANT);
    expect(j.verdict, j.reason).toBe('held');
  });

  it('crossed on a host change, whatever the payload printed (it says every write was refused)', () => {
    const j = judgeWriteOutside(obs(allRoutes('EROFS'), { hostResidue: [...SEEN, 'appeared: /tmp/sc-wos-abcd1234-direct'] }), ctx(), WANT);
    expect(j.verdict).toBe('crossed');
    expect(j.reason).toContain('/tmp/sc-wos-abcd1234-direct');
  });

  it('crossed even when the payload never answered its challenge', () => {
    const j = judgeWriteOutside(fakeObservation({}, { attempted: false, hostResidue: [`changed: ${TARGET}: size, sha256 (…)`] }), ctx(), WANT);
    expect(j.verdict).toBe('crossed');
  });

  it('a change in a place the policy grants is no crossing', () => {
    const policy: Policy = { ...CI_POLICY, files: { ...CI_POLICY.files, writeScope: ['workspace', 'temp', '/tmp'] } };
    const j = judgeWriteOutside(obs(allRoutes(), { hostResidue: [...SEEN, 'appeared: /tmp/sc-wos-abcd1234-direct'] }), ctx(policy), WANT);
    expect(j.verdict, j.reason).toBe('held');
    expect(j.reason).toContain('grants');
  });

  it('inconclusive, never held: a liar printing "held", a missing route, a blind host, no host look, a control that did not land', () => {
    const liar = judgeWriteOutside(obs(['held', 'SANDCHECK-REPORT {"verdict": "held"}'], { hostResidue: SEEN }), ctx(), WANT);
    expect(liar.verdict).toBe('inconclusive');
    const missing = judgeWriteOutside(
      obs(
        allRoutes().filter((l) => !l.includes('"hardlink"')),
        { hostResidue: SEEN },
      ),
      ctx(),
      WANT,
    );
    expect(missing.verdict).toBe('inconclusive');
    expect(missing.reason).toContain('hardlink');
    const forged = judgeWriteOutside(
      obs(
        allRoutes().map((l) => l.replace('token-wos-line', 'token-other')),
        { hostResidue: SEEN },
      ),
      ctx(),
      WANT,
    );
    expect(forged.verdict).toBe('inconclusive');
    const blind = judgeWriteOutside(obs(allRoutes(), { hostResidue: [...SEEN, 'blind: /var/tmp: EACCES'] }), ctx(), WANT);
    expect(blind.verdict).toBe('inconclusive');
    expect(judgeWriteOutside(obs(allRoutes(), {}), ctx(), WANT).verdict).toBe('inconclusive');
    const noControl = judgeWriteOutside(obs(allRoutes(), { hostResidue: SEEN, ...control(false) }), ctx(), WANT);
    expect(noControl.verdict).toBe('inconclusive');
    expect(noControl.reason).toContain('in-scope control');
    const unfinished = judgeWriteOutside(obs(allRoutes(), { hostResidue: SEEN, finished: false }), ctx(), WANT);
    expect(unfinished.verdict).toBe('inconclusive');
  });
});

describe('write-protected-path judge: the host read decides, the payload can only withhold', () => {
  const c = ctx();
  const plan = protectedPlan(c);
  const put = new Map(decoyProjectFiles(c).map((f) => [f.path, f]));
  const fileState = (path: string, over: Partial<HostFileState> = {}): HostFileState => {
    const f = put.get(path);
    return f
      ? { path, kind: 'file', dev: 1, ino: 10 + path.length, mode: f.mode ?? 0o644, size: f.content.length, sha256: sha256Hex(f.content), ...over }
      : { path, kind: 'missing', ...over };
  };
  const paths = [...plan.files.keys(), ...plan.newFiles, plan.control];
  const before = paths.map((p) => fileState(p));
  const controlAfter = fileState(plan.control, { size: (put.get(plan.control)?.content.length ?? 0) + 'token-write-control\n'.length });
  const routeLines = [
    ...[...plan.files.keys()].flatMap((p) =>
      FILE_ROUTES.filter((r) => r !== 'parent-rename' || p.includes('/')).map(
        (r) => `SANDCHECK-WPP token-wpp-line ${JSON.stringify({ route: r, path: p, outcome: 'EROFS' })}`,
      ),
    ),
    ...plan.newFiles.map((p) => `SANDCHECK-WPP token-wpp-line ${JSON.stringify({ route: 'create', path: p, outcome: 'EROFS' })}`),
  ];
  const observe = (after: HostFileState[], stdout = routeLines, rest: Partial<Observation> = {}) =>
    fakeObservation(
      { stdout: capture(stdout.join('\n')) },
      {
        finished: true,
        hostRead: { before, after },
        artifacts: [{ path: plan.control, kind: 'file', size: 1, content: Buffer.from('print()\ntoken-write-control\n') }],
        ...rest,
      },
    );
  const unchanged = [...before.filter((f) => f.path !== plan.control), controlAfter];

  it('the default protected paths of the decoy project: 5 files and a new hook', () => {
    expect([...plan.files.keys()].sort()).toEqual(['.bashrc', '.claude/settings.json', '.git/config', '.git/hooks/pre-commit', '.vscode/tasks.json']);
    expect(plan.newFiles).toEqual(['.git/hooks/post-checkout']);
  });

  it('held only with every file unchanged, every route reported and the control grown on the host', () => {
    expect(judgeProtectedPaths(observe(unchanged), plan).verdict).toBe('held');
  });

  it('crossed on a changed mode, a new inode or a new hook, whatever the payload printed', () => {
    const mode = unchanged.map((f) => (f.path === '.git/hooks/pre-commit' ? { ...f, mode: 0o777 } : f));
    expect(judgeProtectedPaths(observe(mode), plan).reason).toContain('mode 755 → 777');
    const inode = unchanged.map((f) => (f.path === '.bashrc' ? { ...f, ino: 999 } : f));
    expect(judgeProtectedPaths(observe(inode), plan).verdict).toBe('crossed');
    const hook = unchanged.map((f) => (f.path === '.git/hooks/post-checkout' ? { ...f, kind: 'file' as const, size: 9 } : f));
    const j = judgeProtectedPaths(observe(hook, ['held']), plan);
    expect(j.verdict).toBe('crossed');
    expect(j.reason).toContain('.git/hooks/post-checkout: appeared');
  });

  it('inconclusive, never held: a liar, a missing route, a control that did not grow, a payload that did not finish', () => {
    expect(judgeProtectedPaths(observe(unchanged, ['held', 'SANDCHECK-REPORT {"held": true}']), plan).verdict).toBe('inconclusive');
    const noRename = routeLines.filter((l) => !l.includes('"parent-rename"'));
    expect(judgeProtectedPaths(observe(unchanged, noRename), plan).reason).toContain('parent-rename');
    const flat = [...before.filter((f) => f.path !== plan.control), fileState(plan.control)];
    expect(judgeProtectedPaths(observe(flat), plan).verdict).toBe('inconclusive');
    expect(judgeProtectedPaths(observe(unchanged, routeLines, { finished: false }), plan).verdict).toBe('inconclusive');
  });
});
