import { describe, expect, it } from 'vitest';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { HostFileState } from '../../model/host-file.js';
import type { Observation } from '../../model/probe.js';
import { CONTROL_FILE, DIR_ROUTES, TARGET_ROUTES, judgeWriteOutside } from '../../probes/write-outside-scope/judge.js';
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
