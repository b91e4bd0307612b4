/**
 * Presets: every shipped file is a valid command backend configuration claiming only known items (with a reason
 * for each item it leaves out), `preset:<name>` loads through the registry, a missing tool is BACKEND_UNAVAILABLE
 * with its install command, and the command backend's version command and joined per-item arguments work.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commandRuntime, parseCommandConfig } from '../../backends/command/index.js';
import { CommandBackend } from '../../backends/command/command-backend.js';
import { expand } from '../../backends/command/template.js';
import { describeBackends, isBuiltinBackend, loadBackend } from '../../backends/registry.js';
import { ADAPTER_CLAIMS, PRESETS, findPreset, presetNames } from '../../backends/presets/catalog.js';
import { PresetBackend, loadPreset } from '../../backends/presets/preset-backend.js';
import { BackendsReportSchema, backendsCommand } from '../../harness/cli/backends-command.js';
import { SandcheckError } from '../../harness/errors.js';
import { CI_POLICY } from '../../harness/model/policy.js';

/** The items every preset either claims or explains (the policy items the suite judges). */
const JUDGED = [
  'files.hostPaths',
  'files.readOnlyInput',
  'network.egress',
  'resources.cpus',
  'resources.memoryMb',
  'resources.wallSeconds',
  'resources.processes',
  'resources.diskMb',
  'identity.unprivileged',
  'identity.hostCredentials',
  'lifecycle.freshEnvironment',
  'lifecycle.destroyAfter',
  'output.maxBytes',
  'output.sanitized',
  'exports.limits',
] as const;

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof SandcheckError ? err.code : `not a SandcheckError: ${String(err)}`;
}

describe('shipped presets', () => {
  it.each(PRESETS.map((p) => [p.name, p] as const))('%s: a valid file whose every judged item is claimed or explained by the tool', async (name, def) => {
    const { raw } = await def.config();
    const cfg = parseCommandConfig(raw, `preset ${name}`);
    expect(cfg.name).toBe(name);
    expect(cfg.version?.argv.length).toBeGreaterThan(0);
    for (const item of ADAPTER_CLAIMS) expect(cfg.claims).toContain(item);
    for (const item of JUDGED) {
      if (cfg.claims.includes(item)) continue;
      // bwrap-cli is examples/command-bwrap.yaml, which claims everything but output.sanitized.
      expect(cfg.notClaimedReasons[item], `${name} leaves ${item} out without saying why`).toMatch(/\w+ \w+ \w+/);
    }
    expect(def.install).toMatch(/^(apt-get install -y|npm install --prefix) /);
    for (const r of def.requires) expect(r.install).toMatch(/^(apt-get install -y|npm install --prefix) /);
  });

  it('are listed by describeBackends as preset:<name> with their install command, after every built-in', () => {
    const listed = describeBackends();
    for (const name of presetNames()) {
      const entry = listed.find((b) => b.name === `preset:${name}`);
      expect(entry?.install).toBe(findPreset(name)?.install);
      expect(isBuiltinBackend(`preset:${name}`)).toBe(false);
    }
    expect(listed.find((b) => b.name === 'bwrap')).toBeDefined();
    expect(presetNames()).toEqual(['bwrap-cli', 'firejail', 'runsc-do', 'nspawn', 'codex-sandbox', 'codex-sandbox-workspace', 'srt', 'srt-deny-home']);
  });

  it('load through the registry; an unknown preset or options are refused with what to do', async () => {
    const b = await loadBackend('preset:firejail');
    expect(b).toBeInstanceOf(PresetBackend);
    expect(b.name).toBe('firejail');
    expect(b.capabilities(CI_POLICY).enforces).toContain('files.readOnlyInput');
    expect(b.capabilities(CI_POLICY).notEnforcedReasons?.['network.egress']).toMatch(/net none/);
    expect(await codeOf(loadBackend('preset:no-such-tool'))).toBe('BACKEND_UNKNOWN');
    expect(await codeOf(loadPreset('firejail', { extraBinds: ['/'] }))).toBe('CONFIG_INVALID');
  });

  it('a preset whose tool is missing is BACKEND_UNAVAILABLE naming it, with the exact install command', async () => {
    const real = findPreset('firejail');
    if (!real) throw new Error('no firejail preset');
    const { raw, configDir } = await real.config();
    const def = { ...real, install: 'apt-get install -y sandcheck-missing-tool', requires: [{ binary: '/nonexistent/sandcheck-missing-tool', install: 'apt-get install -y sandcheck-missing-tool' }] };
    const backend = new PresetBackend(def, await commandRuntime(parseCommandConfig(raw, 'preset firejail'), 'preset firejail', configDir));
    const err = await backend.preflight().catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('BACKEND_UNAVAILABLE');
    expect(String(err)).toMatch(/preset firejail: \/nonexistent\/sandcheck-missing-tool is not installed/);
    expect(err instanceof SandcheckError && err.hint).toBe('install with: apt-get install -y sandcheck-missing-tool');
  });
});

describe('command backend: version command and joined per-item arguments', () => {
  const base = { name: 'tool', exec: { argv: ['/usr/bin/env', '{argv...}'] } };

  it('preflight asks the version command; its first line leads the description', async () => {
    const b = new CommandBackend(await commandRuntime(parseCommandConfig({ ...base, version: { argv: ['/bin/echo', 'tool 1.2.3'] } }, 't.yaml'), 't.yaml', '/'));
    expect(b.description).not.toMatch(/tool 1\.2\.3/);
    await b.preflight();
    expect(b.description).toMatch(/^tool 1\.2\.3; command backend/);
    expect(await b.toolVersion()).toEqual({ ok: true, version: 'tool 1.2.3' });
  });

  it('a tool that fails its version command is unavailable; a placeholder in it is a config error', async () => {
    const b = new CommandBackend(await commandRuntime(parseCommandConfig({ ...base, version: { argv: ['/bin/sh', '-c', 'echo broken >&2; exit 4'] } }, 't.yaml'), 't.yaml', '/'));
    const err = await b.preflight().catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('BACKEND_UNAVAILABLE');
    expect(String(err)).toMatch(/exited 4: broken/);
    expect(() => parseCommandConfig({ ...base, version: { argv: ['/bin/tool', '{workspace}'] } }, 't.yaml')).toThrow(/t\.yaml: version\.argv\[1\]: the version command takes no placeholders/);
  });

  it('envArg and readOnlyArg may join their own item values into one argument; nothing else may', () => {
    const ok = parseCommandConfig({ ...base, exec: { argv: ['/usr/bin/env', '{env...}', '{readOnly...}', '{argv...}'], envArg: ['--setenv={name}={value}'], readOnlyArg: ['--read-only={hostPath}'] } }, 't.yaml');
    expect(expand(ok.exec.envArg ?? [], { name: 'A', value: 'x = {y} "z"' })).toEqual(['--setenv=A=x = {y} "z"']);
    expect(expand(ok.exec.readOnlyArg ?? [], { hostPath: '/w/in put.csv', boxPath: '/work/in put.csv' })).toEqual(['--read-only=/w/in put.csv']);
    expect(() => parseCommandConfig({ ...base, exec: { argv: ['/usr/bin/env', '{env...}', '{argv...}'], envArg: ['--setenv={name}={workspace}'] } }, 't.yaml')).toThrow(/exec\.envArg\[0\]: only \{name\} \{value\} may be joined/);
    expect(() => parseCommandConfig({ ...base, exec: { argv: ['/usr/bin/env', '--mem={memoryMb}', '{argv...}'] } }, 't.yaml')).toThrow(/a placeholder must be a whole argument/);
  });

  it('boxWorkspace "{workspace}" is the host path; any other value must be absolute', () => {
    expect(parseCommandConfig({ ...base, boxWorkspace: '{workspace}' }, 't.yaml').boxWorkspace).toBe('{workspace}');
    expect(() => parseCommandConfig({ ...base, boxWorkspace: 'work' }, 't.yaml')).toThrow(/an absolute path, or \{workspace\}/);
  });
});

describe('sandcheck backends', () => {
  it('lists every built-in backend and preset with its claims, status and, when unavailable, the install command', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString('utf8')));
    expect(await backendsCommand({ json: true }, out)).toBe(0);
    const report = BackendsReportSchema.parse(JSON.parse(text));
    expect(report.backends.map((b) => b.name)).toEqual(describeBackends().map((b) => b.name));
    for (const b of report.backends) {
      if (b.status === 'unavailable') expect(b.install, b.name).toMatch(/\S/);
      if (b.status === 'available') expect(b.install, b.name).toBeUndefined();
    }
    expect(report.backends.find((b) => b.name === 'command')?.status).toBe('needs-config');
    expect(report.backends.find((b) => b.name === 'process')?.isolation).toBe('none');
    const fj = report.backends.find((b) => b.name === 'preset:firejail');
    expect(fj?.claims).toEqual(expect.arrayContaining([...ADAPTER_CLAIMS, 'files.readOnlyInput']));
    if (fj?.status === 'available') expect(fj.version).toMatch(/firejail version \d/);
  }, 120_000);
});
