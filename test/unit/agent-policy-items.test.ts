import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapArgs, type BoxPlan } from '../../backends/bwrap/argv.js';
import { protectedBinds } from '../../backends/bwrap/protected-paths.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { CI_POLICY, DEFAULT_PROTECTED_PATHS, PolicySchema, REFERENCE_POLICY, type Policy } from '../../model/policy.js';
import { policyRequires } from '../../model/required-items.js';
import { explainPolicy } from '../../harness/policy-explain.js';
import { loadPolicy } from '../../harness/policy-loader.js';
import { packageRoot } from '../../core/paths.js';
import { policyChanges } from '../../reports/gate.js';

const withFiles = (files: Partial<Policy['files']>): Policy => ({ ...CI_POLICY, files: { ...CI_POLICY.files, ...files } });
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('files.writeScope and files.protected (the agent-sandbox contract)', () => {
  it('are policy items a backend can claim', () => {
    expect(POLICY_ITEMS).toContain('files.writeScope');
    expect(POLICY_ITEMS).toContain('files.protected');
  });

  it('the schema takes workspace, temp and host prefixes as write roots, and workspace-relative protected paths only', () => {
    expect(PolicySchema.safeParse(withFiles({ writeScope: ['workspace', 'temp', '/srv/cache'], protected: ['.git/hooks'] })).success).toBe(true);
    for (const bad of [{ writeScope: [] }, { writeScope: ['home'] }, { writeScope: ['/srv/'] }, { writeScope: ['/a/../b'] }])
      expect(PolicySchema.safeParse(withFiles(bad as Partial<Policy['files']>)).success, JSON.stringify(bad)).toBe(false);
    for (const bad of ['/etc/passwd', '../x', '.git/../x', 'a//b', './a', ''])
      expect(PolicySchema.safeParse(withFiles({ protected: [bad] })).success, bad).toBe(false);
  });

  it('are required only when the policy asks them; the shipped presets do not, the agent example does', async () => {
    for (const p of [REFERENCE_POLICY, CI_POLICY]) {
      expect(policyRequires(p, 'files.writeScope')).toBe(false);
      expect(policyRequires(p, 'files.protected')).toBe(false);
    }
    const agent = await loadPolicy(join(packageRoot(), 'examples', 'agent-policy.yaml'));
    expect(agent.files.writeScope).toEqual(['workspace', 'temp']);
    expect(agent.files.protected).toEqual([...DEFAULT_PROTECTED_PATHS]);
    expect(policyRequires(agent, 'files.writeScope')).toBe(true);
    expect(policyRequires(agent, 'files.protected')).toBe(true);
    expect(policyRequires(withFiles({ protected: [] }), 'files.protected')).toBe(false);
    for (const p of [REFERENCE_POLICY, CI_POLICY]) expect(policyRequires(p, 'files.denyRead')).toBe(false);
    expect(agent.files.denyRead).toEqual(['.env', '*.pem', 'id_*']);
    expect(policyRequires(agent, 'files.denyRead')).toBe(true);
    expect(policyRequires(withFiles({ denyRead: [] }), 'files.denyRead')).toBe(false);
    expect(POLICY_ITEMS).toContain('files.denyRead');
  });

  it('policy explain shows both', () => {
    const text = explainPolicy(withFiles({ writeScope: ['workspace', 'temp'], protected: ['.git/hooks', '.bashrc'] }));
    expect(text).toContain('writes: only inside workspace, temp (files.writeScope)');
    expect(text).toContain('protected inside the workspace: .git/hooks, .bashrc (files.protected)');
    expect(explainPolicy(CI_POLICY)).toContain('no write scope asked (files.writeScope unset)');
    expect(explainPolicy(withFiles({ denyRead: ['.env', '*.pem'] }))).toContain('unreadable inside the workspace: .env, *.pem (files.denyRead)');
    expect(explainPolicy(CI_POLICY)).toContain('nothing asked (files.denyRead unset)');
  });

  it('the gate calls a wider write scope and fewer protected paths looser, the opposite tighter', () => {
    const dir = (a: Policy, b: Policy) => policyChanges(a, b).map((c) => `${c.field}:${c.direction}`);
    const scoped = withFiles({ writeScope: ['workspace', 'temp'], protected: ['.git/hooks', '.bashrc'] });
    expect(dir(scoped, withFiles({ writeScope: ['workspace', 'temp', '/tmp'], protected: ['.git/hooks', '.bashrc'] }))).toEqual(['files.writeScope:looser']);
    expect(dir(scoped, withFiles({ protected: ['.git/hooks', '.bashrc'] }))).toEqual(['files.writeScope:looser']);
    expect(dir(scoped, withFiles({ writeScope: ['workspace'], protected: ['.git/hooks', '.bashrc'] }))).toEqual(['files.writeScope:tighter']);
    expect(dir(scoped, withFiles({ writeScope: ['workspace', 'temp'], protected: ['.git/hooks'] }))).toEqual(['files.protected:looser']);
    expect(dir(scoped, withFiles({ writeScope: ['workspace', 'temp'] }))).toEqual(['files.protected:looser']);
    expect(dir(withFiles({}), scoped).sort()).toEqual(['files.protected:tighter', 'files.writeScope:tighter']);
  });

  it('the gate calls fewer deny-listed globs looser (an unset list asks none), more tighter', () => {
    const dir = (a: Policy, b: Policy) => policyChanges(a, b).map((c) => `${c.field}:${c.direction}`);
    const denied = withFiles({ denyRead: ['.env', '*.pem'] });
    expect(dir(denied, withFiles({ denyRead: ['.env'] }))).toEqual(['files.denyRead:looser']);
    expect(dir(denied, withFiles({}))).toEqual(['files.denyRead:looser']);
    expect(dir(denied, withFiles({ denyRead: ['.env', '*.pem', 'id_*'] }))).toEqual(['files.denyRead:tighter']);
    expect(dir(denied, withFiles({ denyRead: ['*.pem', '.env'] }))).toEqual(['files.denyRead:changed']);
    expect(policyChanges(denied, withFiles({ denyRead: ['.env'] }))[0]?.why).toContain('files no longer denied to reads: *.pem');
  });
});

describe("bwrap's protectedPaths option", () => {
  it('binds each existing protected path read-only and its parents over themselves first; never a missing path or one through a link', async () => {
    const w = mkdtempSync(join(tmpdir(), 'sc-protected-'));
    dirs.push(w);
    mkdirSync(join(w, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(w, '.git', 'config'), '[core]\n');
    mkdirSync(join(w, 'real-vscode'));
    writeFileSync(join(w, 'real-vscode', 'tasks.json'), '{}');
    symlinkSync('real-vscode', join(w, '.vscode'));
    const { binds, missing } = await protectedBinds(w, ['.git/hooks', '.git/config', '.bashrc', '.vscode/tasks.json']);
    expect(binds).toEqual([
      { rel: '.git', readOnly: false },
      { rel: '.git/hooks', readOnly: true },
      { rel: '.git/config', readOnly: true },
    ]);
    expect(missing).toEqual(['.bashrc', '.vscode/tasks.json']);
    const plan = { workHost: '/h/w', readOnlyFiles: [], extraBinds: [], protectedBinds: binds } as unknown as BoxPlan;
    const args = bwrapArgs({ ...plan, tools: {}, unsharePid: true, shareNetwork: false, tmpSizeBytes: 1, cwd: '', env: [], argv: ['x'] } as unknown as BoxPlan);
    const at = (s: string) => args.join(' ').indexOf(s);
    expect(at('--bind /h/w /work')).toBeGreaterThan(-1);
    expect(at('--bind /h/w/.git /work/.git')).toBeGreaterThan(at('--bind /h/w /work'));
    expect(at('--ro-bind /h/w/.git/hooks /work/.git/hooks')).toBeGreaterThan(at('--bind /h/w/.git /work/.git'));
  });
});
