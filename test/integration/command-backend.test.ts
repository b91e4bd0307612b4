/**
 * The command backend: the bubblewrap CLI described by examples/command-bwrap.yaml must agree with the
 * native bwrap backend verdict for verdict on the whole security suite under the ci policy, and a
 * template it cannot expand is refused before anything runs.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import createBwrapBackend from '../../backends/bwrap/index.js';
import createCommandBackend, { DEFAULT_STATE_DIR, sweepStaleCommandEnvironments } from '../../backends/command/index.js';
import { SandcheckError } from '../../core/errors.js';
import { CI_POLICY } from '../../model/policy.js';
import { openRunContext } from '../../harness/run-context.js';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { runInLab } from '../helpers/lab-run.js';
import { packageRoot } from '../../core/paths.js';

const temps: string[] = [];
/** A temporary directory of this file's tests, removed after them. */
async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(prefix);
  temps.push(d);
  return d;
}
afterAll(async () => {
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});

const EXAMPLE = 'examples/command-bwrap.yaml';
const skip = await bwrapSkipReason();

/**
 * Differences allowed between the two, each with the reason the command backend cannot do what the native
 * one does. Empty: the example reproduces every control of the native backend.
 */
const ALLOWED_DIFFERENCES: Record<string, string> = {
  // The native backend passes its own BPF deny list to bwrap --seccomp; the example file builds none (and says so).
  'posture-seccomp': 'held on native bwrap; on the example not claimed, run anyway and not held',
  // The native backend re-binds the protected paths read-only and claims both items; the example file claims neither,
  // and ci does not ask for them: not-applicable there.
  'write-outside-scope': 'held on native bwrap; not claimed by the example and not asked by ci: not-applicable',
  'write-protected-path': 'held on native bwrap; not claimed by the example and not asked by ci: not-applicable',
};

async function configWith(argv: string[]): Promise<string> {
  const dir = await tempDir(join(tmpdir(), 'sc-cmdcfg-'));
  const file = join(dir, 'tool.yaml');
  await writeFile(file, JSON.stringify({ name: 'bad-tool', claims: ['network.egress'], exec: { argv } }));
  return file;
}

async function refusal(argv: string[]): Promise<string> {
  const err = await createCommandBackend({ configFile: await configWith(argv) }).catch((e: unknown) => e);
  expect(err instanceof SandcheckError && err.code).toBe('CONFIG_INVALID');
  return String(err);
}

describe('command backend: configuration errors come before anything runs', () => {
  it('names the file and the key of an unknown placeholder, an unset value or a half placeholder', async () => {
    expect(await refusal(['/usr/bin/env', '{workdir}', '{argv...}'])).toMatch(/tool\.yaml: exec\.argv\[1\]: unknown placeholder \{workdir\}/);
    expect(await refusal(['/usr/bin/env', '{image}', '{argv...}'])).toMatch(/tool\.yaml: exec\.argv\[1\]: \{image\} is not set: the file sets no image/);
    expect(await refusal(['/usr/bin/env', '--mem={memoryMb}', '{argv...}'])).toMatch(/exec\.argv\[1\]: a placeholder must be a whole argument/);
    expect(await refusal(['/usr/bin/env', 'true'])).toMatch(/never runs the program/);
  });

  it('preflight refuses a launcher that does not exist, without running anything', async () => {
    const backend = await createCommandBackend({ configFile: await configWith(['/nonexistent/sandbox-tool', '{argv...}']) });
    const err = await backend.preflight().catch((e: unknown) => e);
    expect(err instanceof SandcheckError && err.code).toBe('BACKEND_UNAVAILABLE');
    expect(String(err)).toMatch(/exec\.argv\[0\] "\/nonexistent\/sandbox-tool" is not an executable file/);
    await (await createCommandBackend({ configFile: EXAMPLE })).preflight();
  });

  it('the CLI exits 3 with the file and key, and no environment was made', async () => {
    const file = await configWith(['/usr/bin/env', 'A=1', '{envId}', '{nope}', '{argv...}']);
    const out = await tempDir(join(tmpdir(), 'sc-cmdout-'));
    const r = await execa(
      'npx',
      ['tsx', 'cli/main.ts', 'run', '--backend', 'command', '--backend-config', file, '--policy', 'ci', '--out', out, '--only', 'identity-uid'],
      { reject: false },
    );
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/CONFIG_INVALID: .*tool\.yaml: exec\.argv\[3\]: unknown placeholder \{nope\}/);
    expect(await readdir(out)).not.toContain('security.json');
  }, 60_000);
});

describe.skipIf(skip !== undefined)('command backend through the CLI', () => {
  it("the user's file is checked like an external adapter before its verdicts count", async () => {
    const out = await tempDir(join(tmpdir(), 'sc-cmdout-'));
    const r = await execa(
      process.execPath,
      [
        join(packageRoot(), 'dist', 'cli', 'main.js'),
        'run',
        '--backend',
        'command',
        '--backend-config',
        EXAMPLE,
        '--policy',
        'ci',
        '--out',
        out,
        '--only',
        'identity-uid',
      ],
      { reject: false, all: true },
    );
    expect(r.exitCode, r.all).toBe(0);
    expect(r.all).toMatch(/checking the external adapter command before trusting its verdicts/);
    expect(r.all).toMatch(/adapter command: \d+ blocking check\(s\) passed/);
  }, 120_000);
});

describe.skipIf(skip !== undefined)('command backend wrapping the bwrap CLI vs the native bwrap backend (ci policy, whole security suite)', () => {
  it('agrees verdict for verdict and leaves nothing behind', async () => {
    const native = await runInLab('cmpn1', await createBwrapBackend(), CI_POLICY, securitySuite);
    const command = await runInLab('cmpc1', await createCommandBackend({ configFile: EXAMPLE }), CI_POLICY, securitySuite);
    const byId = new Map(native.security.map((r) => [r.id, r]));
    const diffs: string[] = [];
    for (const c of command.security) {
      const n = byId.get(c.id);
      if (n?.verdict === c.verdict || ALLOWED_DIFFERENCES[c.id] !== undefined) continue;
      diffs.push(`${c.id}: native ${n?.verdict} (${n?.reason.slice(0, 120)}) / command ${c.verdict} (${c.reason.slice(0, 160)})`);
    }
    const count = (rs: readonly { verdict: string }[]): string => {
      const n = new Map<string, number>();
      for (const r of rs) n.set(r.verdict, (n.get(r.verdict) ?? 0) + 1);
      return [...n].map(([v, k]) => `${v} ${k}`).join(', ');
    };
    console.log(`native bwrap: ${count(native.security)}\ncommand-bwrap: ${count(command.security)}`);
    expect(diffs).toEqual([]);
    expect(command.security.map((r) => r.id).sort()).toEqual(native.security.map((r) => r.id).sort());
    // The verdicts are real ones: held where the native backend holds (not a run of not-applicables).
    expect(command.security.filter((r) => r.verdict === 'held').length).toBeGreaterThan(securitySuite.length / 2);
    // Resource verdicts rest on the counting cgroup around the launcher, read from outside.
    const fork = command.security.find((r) => r.id === 'fork-bomb');
    expect(fork?.evidence.some((e) => e.source === 'outside' && e.witness === 'cgroup' && /refused forks \(pids\.events max\) [1-9]/.test(e.detail))).toBe(
      true,
    );
    // Nothing of the run remains: no environment root, no counting cgroup.
    expect((await readdir(DEFAULT_STATE_DIR).catch(() => [])).filter((n) => n.startsWith('cmpc1'))).toEqual([]);
    for (const c of ['memory', 'pids', 'cpuacct', 'freezer']) {
      expect((await readdir(`/sys/fs/cgroup/${c}`).catch(() => [])).filter((n) => n.startsWith('sccmd-cmpc1'))).toEqual([]);
    }
  }, 900_000);
});

describe.skipIf(skip !== undefined)('command backend: a claim the tool does not deliver is caught', () => {
  it('the bwrap file with --share-net still claims network.egress: metadata-ipv4 crosses, seen by the lab', async () => {
    const example = parseYaml(await readFile(EXAMPLE, 'utf8')) as { exec: { argv: string[] } };
    const argv = example.exec.argv.flatMap((a) => (a === '--unshare-all' ? [a, '--share-net'] : [a]));
    // Inline configuration: relative helper paths resolve against the working directory (the package root here).
    const backend = await createCommandBackend({
      ...example,
      name: 'command-bwrap-share-net',
      exec: { ...example.exec, argv: argv.map((a) => (a === 'command-cgroup-limits.sh' ? 'examples/command-cgroup-limits.sh' : a)) },
    });
    const { security } = await runInLab(
      'cmpw1',
      backend,
      CI_POLICY,
      securitySuite.filter((p) => p.id === 'metadata-ipv4'),
    );
    const r = security[0];
    expect(`${r?.id}: ${r?.verdict}`, r?.reason).toBe('metadata-ipv4: crossed');
    expect(r?.evidence.some((e) => e.source === 'outside' && (e.witness === 'decoy:metadata' || e.witness === 'packet-witness'))).toBe(true);
  }, 120_000);
});

describe('command backend: the session shape', () => {
  it('runs create once (its first stdout line is {sessionRef}), execs with it, put/get around the files, destroy once', async () => {
    const dir = await tempDir(join(tmpdir(), 'sc-sess-'));
    const marker = join(dir, 'session');
    const cfg = {
      name: 'fake-session',
      shape: 'session',
      // The program runs only where the session (its file) exists: exec sees {sessionRef}.
      exec: { argv: ['/usr/bin/env', '-C', '{workspace}', '/bin/sh', '-c', 'test -f "$0" && exec "$@"', '{sessionRef}', '{argv...}'], stdin: 'pipe' },
      session: {
        // A session tool that keeps its state in a file named by its reference.
        create: ['/bin/sh', '-c', `echo created > ${marker} && echo ${marker}`],
        put: ['/bin/sh', '-c', `echo put >> ${marker}`],
        get: ['/bin/sh', '-c', `echo get >> ${marker}`],
        destroy: ['/bin/rm', '-f', '{sessionRef}'],
      },
    };
    const backend = await createCommandBackend(cfg);
    const run = await openRunContext('cmdsess1');
    try {
      const env = await backend.create(CI_POLICY, { runId: 'cmdsess1', controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
      onTestFinished(async () => void (await env.destroy()));
      expect((await stat(marker)).isFile()).toBe(true);
      await env.putFiles([{ path: 'in.txt', content: new TextEncoder().encode('hello\n') }]);
      const out: Uint8Array[] = [];
      const r = await env
        .exec({
          argv: ['python3', '-c', 'import sys; print(open("in.txt").read().strip(), sys.stdin.read())'],
          cwd: '',
          stdin: new TextEncoder().encode('stdin!'),
          timeoutMs: 5000,
          maxOutputBytes: 1 << 20,
          stdout: { write: (c) => out.push(c) },
          stderr: { write: () => undefined },
          signal: new AbortController().signal,
        })
        .catch((e: unknown) => e);
      expect(r).toMatchObject({ exitCode: 0, signal: null });
      expect(Buffer.concat(out).toString()).toBe('hello stdin!\n');
      const [got] = await env.getFiles(['in.txt'], { maxBytesPerFile: 1024 });
      expect(got).toMatchObject({ path: 'in.txt', kind: 'file' });
      expect(await readFile(marker, 'utf8')).toBe('created\nput\nget\n');
      expect((await env.destroy()).items).toEqual([]);
      expect(await stat(marker).catch(() => undefined)).toBeUndefined();
      expect((await env.destroy()).items).toEqual([]);
    } finally {
      await run.dispose();
    }
  }, 60_000);
});

describe.skipIf(process.getuid?.() !== 0)('command backend: crash sweep', () => {
  it("removes the counting cgroup, workspace and tool's own temp directories of an environment whose harness is gone, and nothing that lives", async () => {
    const toolDir = await tempDir(join(tmpdir(), 'sc-tooltmp-'));
    const toolTemp = { dir: toolDir, prefix: 'tool-do', file: 'config.json' };
    const backend = await createCommandBackend({ name: 'sweep-me', workspace: 'tmpfs', toolTemp, exec: { argv: ['/usr/bin/env', '{argv...}'] } });
    const run = await openRunContext('cmdswp1');
    try {
      const live = await backend.create(CI_POLICY, { runId: 'cmdswp1', controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
      const dead = await backend.create(CI_POLICY, { runId: 'cmdswp1', controllerEnv: run.controllerEnv, scratchDir: run.scratchDir });
      // What the tool leaves per run (runsc do's bundle): its record carries the launcher's environment.
      const bundle = async (name: string, envId: string): Promise<void> => {
        await mkdir(join(toolDir, name));
        await writeFile(join(toolDir, name, 'config.json'), JSON.stringify({ process: { env: ['SANDCHECK_RUN=cmdswp1', `SANDCHECK_ENV=${envId}`] } }));
      };
      await bundle('tool-do1', dead.id);
      await bundle('tool-do2', live.id);
      const ownerFile = join(DEFAULT_STATE_DIR, `cmdswp1-${dead.id}`, 'owner.json');
      const owner = JSON.parse(await readFile(ownerFile, 'utf8')) as Record<string, unknown>;
      // The same pid with another start time: a harness that died and whose pid was reused.
      await writeFile(ownerFile, JSON.stringify({ ...owner, ownerStartTime: 1 }));
      const deadTool = `cmdswp1-${dead.id}: the tool's directory ${join(toolDir, 'tool-do1')}`;
      const listed = await sweepStaleCommandEnvironments(DEFAULT_STATE_DIR, true);
      expect(listed.removed.sort()).toEqual([deadTool, `command environment cmdswp1-${dead.id}`].sort());
      expect((await readdir(toolDir)).sort()).toEqual(['tool-do1', 'tool-do2']);
      const r = await sweepStaleCommandEnvironments(DEFAULT_STATE_DIR);
      expect(r.removed.sort()).toEqual([deadTool, `cgroup sccmd-cmdswp1-${dead.id}`, `command environment cmdswp1-${dead.id}`].sort());
      expect(r.kept).toEqual([]);
      expect(await readdir(toolDir)).toEqual(['tool-do2']);
      expect(await readdir('/sys/fs/cgroup/memory').then((n) => n.filter((x) => x.startsWith('sccmd-cmdswp1')))).toEqual([`sccmd-cmdswp1-${live.id}`]);
      expect((await live.destroy()).items).toEqual([`the tool left its directory tool-do2 in ${toolDir}; removed`]);
      expect(await readdir(toolDir)).toEqual([]);
      await dead.destroy();
    } finally {
      await run.dispose();
    }
  }, 60_000);
});
