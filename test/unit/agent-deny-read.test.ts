import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapArgs, type BoxPlan } from '../../backends/bwrap/argv.js';
import { hiddenPaths } from '../../backends/bwrap/deny-read.js';
import { deniedToRead, denyReadMatches } from '../../model/deny-read.js';
import { CI_POLICY, PolicySchema, type Policy } from '../../model/policy.js';
import type { Observation } from '../../model/probe.js';
import { DRP_MARKER, READ_ROUTES, judgeDeniedReads } from '../../probes/read-denied-path/judge.js';
import { denyPlan } from '../../probes/read-denied-path/probe.js';
import { ctx } from '../helpers/network-obs.js';
import { capture, fakeObservation } from '../helpers/observation.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const withDeny = (denyRead: string[] | undefined): Policy => ({ ...CI_POLICY, files: { ...CI_POLICY.files, ...(denyRead ? { denyRead } : {}) } });

describe('files.denyRead globs', () => {
  it('match a name at any depth without a slash, the whole path with one; * and ? within a component, ** across', () => {
    const cases: [string, string, boolean][] = [
      ['.env', '.env', true],
      ['.env', 'svc/.env', true],
      ['.env', 'a.env', false],
      ['*.pem', 'config/deploy.pem', true],
      ['id_*', '.ssh/id_ed25519', true],
      ['config/*.pem', 'config/deploy.pem', true],
      ['config/*.pem', 'x/config/deploy.pem', false],
      ['**/x.key', 'a/b/x.key', true],
      ['?.txt', 'ab.txt', false],
      ['f.x', 'fax', false],
    ];
    for (const [g, p, want] of cases) expect(denyReadMatches(g, p), `${g} ~ ${p}`).toBe(want);
    // A denied directory denies what is in it.
    expect(deniedToRead(['.ssh'], '.ssh/id_ed25519')).toBe(true);
    expect(deniedToRead(['config/**'], 'config/app.toml')).toBe(true);
    expect(deniedToRead(['.ssh'], 'src/app.py')).toBe(false);
  });

  it('the schema takes workspace-relative globs only, at most 64', () => {
    expect(PolicySchema.safeParse(withDeny(['.env', '*.pem', 'id_*', 'config/**'])).success).toBe(true);
    for (const bad of ['/etc/shadow', '../x', 'a//b', './a', '', '[ab].pem', '{a,b}', 'a\\b'])
      expect(PolicySchema.safeParse(withDeny([bad])).success, bad).toBe(false);
    expect(PolicySchema.safeParse(withDeny(Array.from({ length: 65 }, (_, i) => `f${i}`))).success).toBe(false);
  });
});

describe('read-denied-path judge: the host-known values decide, the payload can only withhold', () => {
  const c = ctx(withDeny(['.env', '*.pem', 'id_*']));
  const plan = denyPlan(c);
  const line = (route: string, path: string, outcome = 'EACCES') => `${DRP_MARKER} token-drp-line ${JSON.stringify({ route, path, outcome, bytes: 0 })}`;
  const allRoutes = [...plan.denied.keys()].flatMap((p) => READ_ROUTES.map((r) => line(r, p)));
  const controlOut = [`read control ${plan.control?.path}: tag = "${plan.control?.value}"`, line('control', plan.control?.path ?? '', 'ok')];
  const obs = (stdout: string[], rest: Partial<Observation> = {}) => fakeObservation({ stdout: capture(stdout.join('\n')) }, { finished: true, ...rest });

  it('the agent deny-list over the decoy project: .env, the key and the pem, with config/app.toml as the control', () => {
    expect([...plan.denied.keys()].sort()).toEqual(['.env', '.ssh/id_ed25519', 'config/deploy.pem']);
    expect(plan.control?.path).toBe('config/app.toml');
    expect(new Set(plan.denied.values()).size).toBe(3);
  });

  it('held only with every route reported and the control value out', () => {
    const j = judgeDeniedReads(obs([...allRoutes, ...controlOut]), plan);
    expect(j.verdict, j.reason).toBe('held');
  });

  it('crossed when a deny-listed value comes out (raw, base64, on stderr or in a fetched file), whatever the payload says', () => {
    const pem = plan.denied.get('config/deploy.pem') ?? '';
    expect(judgeDeniedReads(obs(['held', pem]), plan).verdict).toBe('crossed');
    const b64 = judgeDeniedReads(fakeObservation({ stderr: capture(Buffer.from(pem).toString('base64')) }, { attempted: false }), plan);
    expect(b64.verdict).toBe('crossed');
    expect(b64.reason).toContain('config/deploy.pem');
    const art = judgeDeniedReads(
      obs([...allRoutes, ...controlOut], { artifacts: [{ path: 'out.txt', kind: 'file', size: 1, content: Buffer.from(pem) }] }),
      plan,
    );
    expect(art.verdict).toBe('crossed');
  });

  it('a value of a file the policy does not deny is no crossing', () => {
    const only = denyPlan(ctx(withDeny(['*.pem'])));
    expect([...only.denied.keys()]).toEqual(['config/deploy.pem']);
  });

  it('a glob matching none of the project files gets a planted file of its own; a control the policy denies is replaced', () => {
    const p = denyPlan(ctx(withDeny(['config/**', 'secrets/*.key'])));
    expect([...p.denied.keys()]).toContain('secrets/sc.key');
    expect(p.control?.path).toBe('sc-read-control.txt');
    expect(denyPlan(ctx(withDeny(['*']))).control).toBeUndefined();
    const dir = denyPlan(ctx(withDeny(['.ssh'])));
    expect([...dir.denied.keys()]).toEqual(['.ssh/id_ed25519']);
  });

  it('inconclusive, never held: a liar, a missing route, no control value, a truncated output, an unfinished payload', () => {
    expect(judgeDeniedReads(obs(['held', 'SANDCHECK-REPORT {"verdict": "held"}', ...controlOut]), plan).verdict).toBe('inconclusive');
    const noCat = judgeDeniedReads(obs([...allRoutes.filter((l) => !l.includes('"cat"')), ...controlOut]), plan);
    expect(noCat.verdict).toBe('inconclusive');
    expect(noCat.reason).toContain('cat');
    const noControl = judgeDeniedReads(obs(allRoutes), plan);
    expect(noControl.verdict).toBe('inconclusive');
    expect(noControl.reason).toContain('config/app.toml');
    const whole = capture([...allRoutes, ...controlOut].join('\n'));
    const big = fakeObservation({ stdout: { ...whole, bytes: whole.bytes + 100_000, truncated: true } }, { finished: true });
    expect(judgeDeniedReads(big, plan).verdict).toBe('inconclusive');
    expect(judgeDeniedReads(obs([...allRoutes, ...controlOut], { finished: false }), plan).verdict).toBe('inconclusive');
    const forged = allRoutes.map((l) => l.replace('token-drp-line', 'token-other'));
    expect(judgeDeniedReads(obs([...forged, ...controlOut]), plan).verdict).toBe('inconclusive');
  });
});

describe("bwrap's denyReadPaths option", () => {
  it('hides every matching file and directory (not walking into a hidden one), never a link', async () => {
    const w = mkdtempSync(join(tmpdir(), 'sc-deny-'));
    dirs.push(w);
    mkdirSync(join(w, 'config'));
    writeFileSync(join(w, 'config', 'deploy.pem'), 'k');
    writeFileSync(join(w, 'config', 'app.toml'), 'x');
    mkdirSync(join(w, '.ssh'));
    writeFileSync(join(w, '.ssh', 'id_ed25519'), 'k');
    writeFileSync(join(w, '.env'), 'x');
    symlinkSync('config/deploy.pem', join(w, 'link.pem'));
    expect(await hiddenPaths(w, ['.env', '*.pem', 'id_*'])).toEqual([
      { rel: '.env', dir: false },
      { rel: '.ssh/id_ed25519', dir: false },
      { rel: 'config/deploy.pem', dir: false },
    ]);
    expect(await hiddenPaths(w, ['.ssh'])).toEqual([{ rel: '.ssh', dir: true }]);
    expect(await hiddenPaths(w, [])).toEqual([]);
    await expect(hiddenPaths(w, ['*.pem'], 3)).rejects.toMatchObject({ code: 'HARNESS' });
    const plan = {
      workHost: '/h/w',
      readOnlyFiles: [],
      extraBinds: [],
      protectedBinds: [{ rel: 'config', readOnly: false }],
      hiddenPaths: [
        { rel: 'config/deploy.pem', dir: false },
        { rel: '.ssh', dir: true },
      ],
    };
    const args = bwrapArgs({
      ...plan,
      tools: {},
      unsharePid: true,
      shareNetwork: false,
      tmpSizeBytes: 1,
      cwd: '',
      env: [],
      argv: ['x'],
    } as unknown as BoxPlan).join(' ');
    expect(args.indexOf('--ro-bind /dev/null /work/config/deploy.pem')).toBeGreaterThan(args.indexOf('--bind /h/w/config /work/config'));
    expect(args).toContain('--tmpfs /work/.ssh --remount-ro /work/.ssh');
  });
});
