import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readToolTempRecord, recordToolTemp, removeToolTemp } from '../../backends/command/tool-temp.js';

const spec = (dir: string) => ({ dir, prefix: 'runsc-do', file: 'config.json' });
const marks = { SANDCHECK_RUN: 'rabc123', SANDCHECK_ENV: '0a1b2c3d' };
const bundle = (run: string, env: string): string =>
  JSON.stringify({ process: { env: ['PATH=/usr/bin:/bin', `SANDCHECK_RUN=${run}`, `SANDCHECK_ENV=${env}`] } });

describe("a tool's own temp directories, removed by the environment's markers", () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('removes only the directory whose record names this run and this environment, whole words only', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sc-tool-temp-'));
    const make = async (name: string, content?: string): Promise<void> => {
      await mkdir(join(dir, name));
      if (content !== undefined) await writeFile(join(dir, name, 'config.json'), content);
    };
    await make('runsc-do111', bundle('rabc123', '0a1b2c3d'));
    await make('runsc-do222', bundle('rabc123', 'ffffffff')); // another environment of the run
    await make('runsc-do333', bundle('rother', '0a1b2c3d')); // another run, same environment id
    await make('runsc-do444', bundle('rabc123', '0a1b2c3d9')); // an id that only starts with ours
    await make('runsc-do555'); // no record
    await make('other-111', bundle('rabc123', '0a1b2c3d')); // not the tool's prefix
    // A link to our bundle is not the tool's directory: never followed, never removed.
    await symlink(join(dir, 'runsc-do111'), join(dir, 'runsc-do666'));
    await mkdir(join(dir, 'runsc-do777'));
    await symlink(join(dir, 'runsc-do111', 'config.json'), join(dir, 'runsc-do777', 'config.json'));

    expect(await removeToolTemp(spec(dir), marks)).toEqual({ removed: ['runsc-do111'], kept: [] });
    expect((await readdir(dir)).sort()).toEqual(['other-111', 'runsc-do222', 'runsc-do333', 'runsc-do444', 'runsc-do555', 'runsc-do666', 'runsc-do777']);
    // Once removed, a second pass finds nothing; a missing temp directory is not an error.
    expect(await removeToolTemp(spec(dir), marks)).toEqual({ removed: [], kept: [] });
    expect(await removeToolTemp(spec(join(dir, 'absent')), marks)).toEqual({ removed: [], kept: [] });
  });

  it('a dry run lists what it would remove and removes nothing', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sc-tool-temp-'));
    await mkdir(join(dir, 'runsc-do1'));
    await writeFile(join(dir, 'runsc-do1', 'config.json'), bundle('rabc123', '0a1b2c3d'));
    expect(await removeToolTemp(spec(dir), marks, { dryRun: true })).toEqual({ removed: ['runsc-do1'], kept: [] });
    expect(await readdir(dir)).toEqual(['runsc-do1']);
  });

  it("the environment's record of its tool's temp spec reads back, and a link, a second record or garbage is refused", async () => {
    dir = await mkdtemp(join(tmpdir(), 'sc-tool-temp-'));
    const env = join(dir, 'env');
    await mkdir(env);
    expect(await readToolTempRecord(env)).toBeUndefined();
    recordToolTemp(env, spec('/tmp'));
    expect(await readToolTempRecord(env)).toEqual(spec('/tmp'));
    expect(() => recordToolTemp(env, spec('/var/tmp'))).toThrow(/EEXIST/);
    const linked = join(dir, 'linked');
    await mkdir(linked);
    await symlink(join(env, 'tool-temp.json'), join(linked, 'tool-temp.json'));
    expect(await readToolTempRecord(linked)).toBeUndefined();
    const bad = join(dir, 'bad');
    await mkdir(bad);
    await writeFile(join(bad, 'tool-temp.json'), JSON.stringify({ dir: 'relative', prefix: 'x', file: 'y' }));
    expect(await readToolTempRecord(bad)).toBeUndefined();
    await writeFile(join(bad, 'tool-temp.json'), '{not json');
    expect(await readToolTempRecord(bad)).toBeUndefined();
  });
});
