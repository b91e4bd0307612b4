/**
 * Presets: every shipped file is a valid command backend configuration claiming only known items (with a reason
 * for each item it leaves out), `preset:<name>` loads through the registry, a missing tool is BACKEND_UNAVAILABLE
 * with its install command, and the command backend's version command and joined per-item arguments work.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commandRuntime, parseCommandConfig } from '../../backends/command/index.js';
import { POLICY_ITEMS } from '../../model/backend-contract.js';
import { CommandBackend } from '../../backends/command/command-backend.js';
import { expand } from '../../backends/command/template.js';
import { describeBackends, isBuiltinBackend, loadBackend } from '../../backends/registry.js';
import { ADAPTER_CLAIMS, PRESETS, findPreset, missingRequirements, presetNames } from '../../backends/presets/catalog.js';
import { PresetBackend, loadPreset } from '../../backends/presets/preset-backend.js';
import { BackendsReportSchema, backendEntry, backendsCommand, backendsText, type BackendsEntry } from '../../cli/backends-command.js';
import { doctorText, type DoctorReport } from '../../cli/doctor.js';
import { collectEnvironment } from '../../harness/environment-facts.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';

/** The items every preset either claims or explains: every policy item but the posture ones (no preset claims those yet) and the kernel's. */
const JUDGED = POLICY_ITEMS.filter((item) => !item.startsWith('posture.') && item !== 'isolation.separateKernel');

const MISSING_INSTALL = 'apt-get install -y sandcheck-missing-tool';

/** The firejail preset, as if its tool were not installed here. */
async function presetMissingItsTool(): Promise<PresetBackend> {
  const real = findPreset('firejail');
  if (!real) throw new Error('no firejail preset');
  const { raw, configDir } = await real.config();
  const def = { ...real, install: MISSING_INSTALL, requires: [{ binary: '/nonexistent/sandcheck-missing-tool', install: MISSING_INSTALL }] };
  return new PresetBackend(def, await commandRuntime(parseCommandConfig(raw, 'preset firejail'), 'preset firejail', configDir));
}

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
    expect(presetNames()).toEqual([
      'bwrap-cli',
      'firejail',
      'runsc-do',
      'nspawn',
      'codex-sandbox',
      'codex-sandbox-workspace',
      'srt',
      'srt-deny-home',
      'podman',
      'podman-runsc',
    ]);
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

  it('a preset whose tool is missing is BACKEND_UNAVAILABLE naming it, with the exact install command (what `run` prints)', async () => {
    const backend = await presetMissingItsTool();
    const err = await backend.preflight().catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('BACKEND_UNAVAILABLE');
    expect(String(err)).toMatch(
      /preset firejail: \/nonexistent\/sandcheck-missing-tool is not installed; install with: apt-get install -y sandcheck-missing-tool/,
    );
    expect(err instanceof SandcheckError && err.hint).toBe(MISSING_INSTALL);
  });

  it('`sandcheck backends` lists a preset whose tool is missing as unavailable, with the exact install command', async () => {
    const backend = await presetMissingItsTool();
    const e = await backendEntry('preset:firejail', 'firejail', MISSING_INSTALL, () => Promise.resolve(backend));
    expect(e.status).toBe('unavailable');
    expect(e.install).toBe(MISSING_INSTALL);
    expect(e.detail).toMatch(/sandcheck-missing-tool is not installed/);
    expect(e.claims).toContain('files.readOnlyInput');
    expect(backendsText({ report: 'sandcheck-backends', version: '1.0.0', policy: 'ci', backends: [e] })).toContain(`install: ${MISSING_INSTALL}`);
  });
});

describe('command backend: version command and joined per-item arguments', () => {
  const base = { name: 'tool', exec: { argv: ['/usr/bin/env', '{argv...}'] } };

  it('preflight asks the version command; its first line leads the description', async () => {
    const b = new CommandBackend(
      await commandRuntime(parseCommandConfig({ ...base, version: { argv: ['/bin/echo', 'tool 1.2.3'] } }, 't.yaml'), 't.yaml', '/'),
    );
    expect(b.description).not.toMatch(/tool 1\.2\.3/);
    await b.preflight();
    expect(b.description).toMatch(/^tool 1\.2\.3; command backend/);
    expect(await b.toolVersion()).toEqual({ ok: true, version: 'tool 1.2.3' });
  });

  it('a tool that fails its version command is unavailable; a placeholder in it is a config error', async () => {
    const b = new CommandBackend(
      await commandRuntime(parseCommandConfig({ ...base, version: { argv: ['/bin/sh', '-c', 'echo broken >&2; exit 4'] } }, 't.yaml'), 't.yaml', '/'),
    );
    const err = await b.preflight().catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('BACKEND_UNAVAILABLE');
    expect(String(err)).toMatch(/exited 4: broken/);
    expect(() => parseCommandConfig({ ...base, version: { argv: ['/bin/tool', '{workspace}'] } }, 't.yaml')).toThrow(
      /t\.yaml: version\.argv\[1\]: the version command takes no placeholders/,
    );
  });

  it('envArg and readOnlyArg may join their own item values into one argument; nothing else may', () => {
    const ok = parseCommandConfig(
      {
        ...base,
        exec: {
          argv: ['/usr/bin/env', '{env...}', '{readOnly...}', '{argv...}'],
          envArg: ['--setenv={name}={value}'],
          readOnlyArg: ['--read-only={hostPath}'],
        },
      },
      't.yaml',
    );
    expect(expand(ok.exec.envArg ?? [], { name: 'A', value: 'x = {y} "z"' })).toEqual(['--setenv=A=x = {y} "z"']);
    expect(expand(ok.exec.readOnlyArg ?? [], { hostPath: '/w/in put.csv', boxPath: '/work/in put.csv' })).toEqual(['--read-only=/w/in put.csv']);
    expect(() =>
      parseCommandConfig({ ...base, exec: { argv: ['/usr/bin/env', '{env...}', '{argv...}'], envArg: ['--setenv={name}={workspace}'] } }, 't.yaml'),
    ).toThrow(/exec\.envArg\[0\]: only \{name\} \{value\} may be joined/);
    expect(() => parseCommandConfig({ ...base, exec: { argv: ['/usr/bin/env', '--mem={memoryMb}', '{argv...}'] } }, 't.yaml')).toThrow(
      /a placeholder must be a whole argument/,
    );
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

describe('name columns of `sandcheck backends` and `sandcheck doctor`', () => {
  const names = ['bwrap', ...presetNames().map((n) => `preset:${n}`)];
  const column = (line: string, marker: string): number => line.indexOf(marker);

  it('backends: every version starts in one column, after the longest preset name', () => {
    const backends: BackendsEntry[] = names.map((name) => ({ name, kind: 'preset', description: 'd', status: 'available', version: `v-${name}`, claims: [] }));
    const lines = backendsText({ report: 'sandcheck-backends', version: '1.0.0', policy: 'ci', backends })
      .split('\n')
      .filter((l) => l.includes('(v-'));
    expect(lines).toHaveLength(names.length);
    const starts = new Set(lines.map((l) => column(l, '(v-')));
    expect(starts.size, lines.join('\n')).toBe(1);
    expect([...starts][0]).toBeGreaterThan(
      column(lines.find((l) => l.includes('codex-sandbox-workspace')) ?? '', 'preset:codex-sandbox-workspace') + 'preset:codex-sandbox-workspace'.length,
    );
  });

  it('doctor: every detail starts in one column, preset:codex-sandbox-workspace included', () => {
    const check = (name: string): DoctorReport['backends'][number] => ({ name, status: 'ok', detail: `detail-of-${name}` });
    const report: DoctorReport = {
      doctor: 'sandcheck-doctor',
      version: '1.0.0',
      ok: true,
      exitCode: 0,
      chosen: check('bwrap'),
      lab: check('lab'),
      backends: names.map(check),
    } as DoctorReport;
    const lines = doctorText(report)
      .split('\n')
      .filter((l) => l.includes('detail-of-') && !l.startsWith('chosen:'));
    const starts = new Set(lines.map((l) => column(l, 'detail-of-')));
    expect(starts.size, lines.join('\n')).toBe(1);
  });
});

describe("a preset's tool version in the scorecard's environment", () => {
  it("environment.tools records the preset tool's own answer to its version command", async () => {
    const backend = await loadBackend('preset:bwrap-cli');
    const missing = await missingRequirements(PRESETS.find((p) => p.name === 'bwrap-cli') ?? PRESETS[0]!);
    const env = await collectEnvironment({ policy: CI_POLICY, backendName: 'preset:bwrap-cli', backend });
    const own = env.tools.find((t) => t.tool === 'backend:preset:bwrap-cli');
    if (missing.length > 0) expect(own?.status).toBe('failed');
    else expect(own).toMatchObject({ status: 'ok', version: expect.stringMatching(/^bubblewrap \d/) });
  });
});
