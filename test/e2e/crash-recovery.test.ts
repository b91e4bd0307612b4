import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readConfigFile } from '../../core/config-file.js';
import { validateScorecard } from '../../reports/validate.js';
import { sandcheck, tempOut } from '../helpers/cli.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const noBwrap = await bwrapSkipReason();

const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('CLI: nothing lost, nothing left', () => {
  it('an --out that is a file: exit 3 before anything runs, with what to do, no stack trace', async () => {
    const dir = await tempOut();
    const file = join(dir, 'out.txt');
    writeFileSync(file, 'x');
    const r = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', file]);
    expect(r.exitCode).toBe(3);
    expect(r.all).toContain('OUT_DIR_UNUSABLE');
    expect(r.all).toContain('hint: give a directory');
    expect(r.all).not.toMatch(/\n\s+at /);
  });

  it('`list --tasks DIR` shows task titles escaped: a task file cannot set the title or clear the screen', async () => {
    const dir = await tempOut();
    await mkdir(join(dir, 'cases'));
    const title = 'nice \u001b]0;pwned\u0007 \u001b[2J\u001b[H \u202egnp.exe \u009b';
    writeFileSync(
      join(dir, 'cases', 'spoof.json'),
      JSON.stringify({ id: 'spoof', title, expected: 'accept', program: 'print(1)', predicate: { type: 'exit-code', code: 0 } }),
    );
    const r = await sandcheck(['list', '--tasks', join(dir, 'cases')]);
    expect(r.exitCode).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith('spoof')) ?? '';
    expect(line).toContain('\\u202egnp.exe \\x9b');
    expect(r.stdout).not.toMatch(RAW_CONTROL);
  });

  it('a SIGKILLed run: `clean` removes what it left, `report --recover` turns its journal into incomplete cards', async () => {
    const dir = await tempOut();
    const out = join(dir, 'out');
    const owners = join(dir, 'owners');
    const env = { SANDCHECK_OWNERSHIP_DIR: owners };
    const run = sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', 'wall-clock-sleep', '--concurrency', '1', '--out', out], {
      env,
    });
    // Wait until the first result is on disk, then kill the harness with no chance to clean up.
    const journal = join(out, 'run-journal.jsonl');
    for (let i = 0; i < 300 && !(existsSync(journal) && readFileSync(journal, 'utf8').split('\n').length > 2); i++) await sleep(100);
    run.kill('SIGKILL');
    await run;
    const [owned] = readdirSync(owners);
    expect(owned).toMatch(/^r[0-9a-f]{10}\.jsonl$/);
    const runId = (owned ?? '').replace('.jsonl', '');
    const left = readFileSync(join(owners, owned ?? ''), 'utf8');
    const scratch = /"path":"([^"]+)"/.exec(left)?.[1] ?? '';
    expect(scratch).toContain(`sandcheck-${runId}-`);
    expect(existsSync(scratch)).toBe(true);

    const clean = await sandcheck(['clean'], { env });
    expect(clean.exitCode).toBe(0);
    expect(clean.stdout).toContain(`removed: ${runId}: dir ${scratch}`);
    expect(existsSync(scratch)).toBe(false);
    expect(readdirSync(owners)).toEqual([]);

    const rec = await sandcheck(['report', '--recover', out], { env });
    expect(rec.exitCode).toBe(0);
    expect(rec.stdout).toContain(`recovered run ${runId}: 1 result(s)`);
    for (const kind of ['security', 'task'] as const) {
      const card = await readConfigFile(join(out, `${kind}.json`));
      expect(validateScorecard(kind, card).valid).toBe(true);
      expect((card as { run: { incomplete: boolean } }).run.incomplete).toBe(true);
    }
    // Nothing left to recover the second time.
    expect((await sandcheck(['report', '--recover', out], { env })).exitCode).toBe(3);
  });
  it.skipIf(noBwrap !== undefined)(
    "a SIGKILLed bwrap run: `clean --dry-run` lists the backend's leftovers and touches nothing, `clean` removes them",
    async () => {
      const dir = await tempOut();
      const out = join(dir, 'out');
      const owners = join(dir, 'owners');
      const env = { SANDCHECK_OWNERSHIP_DIR: owners };
      const run = sandcheck(['run', '--backend', 'bwrap', '--policy', 'ci', '--only', 'wall-clock-sleep', '--out', out], { env });
      // Kill the harness while the box runs: its workspace and cgroups stay behind.
      let runId = '';
      for (let i = 0; i < 300 && runId === ''; i++) {
        await sleep(100);
        const [owned] = existsSync(owners) ? readdirSync(owners) : [];
        const id = (owned ?? '').replace('.jsonl', '');
        const boxCgroups = (): string[] =>
          ['pids', 'memory', 'unified', '']
            .flatMap((c) => (existsSync(`/sys/fs/cgroup/${c}`) ? readdirSync(`/sys/fs/cgroup/${c}`) : []))
            .filter((n) => n.startsWith(`sandcheck-${id}-`));
        if (id && readdirSync('/run/sandcheck/bwrap').some((k) => k.startsWith(`${id}-`)) && boxCgroups().length > 0) runId = id;
      }
      expect(runId).not.toBe('');
      run.kill('SIGKILL');
      await run.catch(() => undefined);
      const workspaces = () => readdirSync('/run/sandcheck/bwrap').filter((k) => k.startsWith(`${runId}-`));
      expect(workspaces().length).toBeGreaterThan(0);

      const dry = await sandcheck(['clean', '--dry-run'], { env });
      expect(dry.exitCode).toBe(0);
      expect(dry.stdout).toMatch(new RegExp(`would remove: bwrap: workspace ${runId}-[0-9a-f]{8}`));
      expect(dry.stdout).toMatch(new RegExp(`would remove: bwrap: cgroup v[12] sandcheck-${runId}-`));
      expect(workspaces().length).toBeGreaterThan(0);
      expect(readdirSync(owners).length).toBe(1);

      const clean = await sandcheck(['clean'], { env });
      expect(clean.exitCode).toBe(0);
      expect(clean.stdout).toMatch(new RegExp(`removed: bwrap: workspace ${runId}-[0-9a-f]{8}`));
      expect(workspaces()).toEqual([]);
      expect(readdirSync(owners)).toEqual([]);
    },
    60_000,
  );
});
