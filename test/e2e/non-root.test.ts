/**
 * A run without root cannot start bwrap boxes. Outside CI it falls back to the unsandboxed process control with a
 * banner; in CI that would pass while testing nothing, so it is refused (exit 3) unless the control is asked for.
 */
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { inCi } from '../../cli/run-command.js';
import { CLI } from '../helpers/cli.js';

const isRoot = process.getuid?.() === 0;
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The CLI as uid/gid 65534 (nobody), with a scratch directory it may write. */
async function asNobody(args: string[], env: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), 'sc-nonroot-'));
  dirs.push(dir);
  await chmod(dir, 0o777);
  const res = await execa(
    'setpriv',
    ['--reuid', '65534', '--regid', '65534', '--clear-groups', process.execPath, CLI, ...args.map((a) => a.replace('{dir}', dir))],
    {
      reject: false,
      all: true,
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir, ...env },
      extendEnv: false,
    },
  );
  return { res, dir };
}

describe('CI is told apart from a desk', () => {
  it('CI=true, 1 or any text is CI; unset, empty, 0 and false are not', () => {
    expect([{ CI: 'true' }, { CI: '1' }, { CI: 'woodpecker' }].map(inCi)).toEqual([true, true, true]);
    expect([{}, { CI: '' }, { CI: '0' }, { CI: 'false' }, { CI: 'False' }].map(inCi)).toEqual([false, false, false, false, false]);
  });
});

describe.skipIf(!isRoot)('a run without root', () => {
  it('in CI: refused (exit 3) naming what is missing, and nothing is created', async () => {
    const { res, dir } = await asNobody(['run', '--policy', 'ci', '--out', '{dir}/out', '--only', 'identity-uid'], { CI: 'true' });
    expect(res.exitCode, res.all).toBe(3);
    expect(res.stderr).toMatch(/BACKEND_UNAVAILABLE: the default backend bwrap cannot run here \(.*\), and in CI \(CI=true\) a run never falls back/);
    expect(res.stderr).toMatch(/--backend process/);
    await expect(stat(join(dir, 'out'))).rejects.toMatchObject({ code: 'ENOENT' });
  }, 60_000);

  it('in CI with --backend process: the control runs, as asked, with its banner', async () => {
    const { res, dir } = await asNobody(['run', '--backend', 'process', '--policy', 'ci', '--out', '{dir}/out', '--only', 'secret-decoy-env'], { CI: 'true' });
    expect([0, 1], res.all).toContain(res.exitCode);
    expect(res.all).toMatch(/isolates NOTHING/);
    expect((await stat(join(dir, 'out', 'security.json'))).isFile()).toBe(true);
  }, 60_000);

  it('at a desk (no CI): it falls back to the control with a notice; doctor says NOT READY (exit 1)', async () => {
    const { res } = await asNobody(['run', '--policy', 'ci', '--out', '{dir}/out', '--only', 'secret-decoy-env'], {});
    expect([0, 1], res.all).toContain(res.exitCode);
    expect(res.all).toMatch(/bwrap is not usable here .*falling back to the process control/);
    const doctor = await asNobody(['doctor'], {});
    expect(doctor.res.exitCode, doctor.res.all).toBe(1);
    expect(doctor.res.stdout).toMatch(/NOT READY: the default backend bwrap \(run would fall back to the unsandboxed process control\)/);
  }, 90_000);
});
