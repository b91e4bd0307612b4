import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MatrixReportSchema } from '../../reports/matrix-model.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';
import { sandcheck, tempOut } from '../helpers/cli.js';

const skip = await bwrapSkipReason();
const ONLY = ['identity-uid', 'secret-decoy-file'];

describe.skipIf(skip !== undefined)(`sandcheck matrix, for real${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('--backend process,bwrap runs both into OUT/runs/<backend>; a docker backend whose daemon does not answer is a column marked unavailable with its install command; exit 2', async () => {
    const out = await tempOut();
    // A Docker daemon that does not exist: the docker backend is unavailable here, whatever the machine has.
    const r = await sandcheck(['matrix', '--backend', 'process,bwrap', '--backend', 'docker-hardened', '--policy', 'ci', '--only', ...ONLY, '--out', out], {
      env: { DOCKER_HOST: 'unix:///nonexistent/sandcheck-matrix-test.sock' },
    });
    expect(r.exitCode, r.all).toBe(2);
    for (const b of ['process', 'bwrap']) expect((await stat(join(out, 'runs', b, 'security.json'))).isFile()).toBe(true);
    const m = MatrixReportSchema.parse(JSON.parse(await readFile(join(out, 'matrix.json'), 'utf8')));
    expect(m.columns.map((c) => [c.backend, c.status])).toEqual([
      ['process', 'ran'],
      ['bwrap', 'ran'],
      ['docker-hardened', 'unavailable'],
    ]);
    const [p, b, d] = m.columns;
    expect(p?.security).toMatchObject({ total: 2, crossed: 2 });
    expect(b?.security).toMatchObject({ total: 2, held: 2, crossed: 0, inconclusive: 0 });
    expect(b?.score).toMatch(/^crossed 0 · inconclusive 0 · /);
    expect(b?.tool).toMatch(/bubblewrap/);
    expect(p?.coldStartMs?.samples).toBeGreaterThan(0);
    expect(d?.unavailable?.install).toContain('docker.io');
    expect(m.rows.map((row) => row.id).sort()).toEqual([...ONLY].sort());
    const html = await readFile(join(out, 'matrix.html'), 'utf8');
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('unavailable');
    expect(await readFile(join(out, 'matrix.md'), 'utf8')).toMatch(/\| \*\*identity-uid\*\* \| crossed \| held \| unavailable \|/);
    expect(r.stdout).toMatch(/^docker-hardened: not run: unavailable/m);

    // The directories of those runs, put side by side again without running anything: every column ran, exit 0.
    const again = await tempOut();
    const r2 = await sandcheck(['matrix', join(out, 'runs', 'process'), join(out, 'runs', 'bwrap'), '--out', again]);
    expect(r2.exitCode, r2.all).toBe(0);
    expect(MatrixReportSchema.parse(JSON.parse(await readFile(join(again, 'matrix.json'), 'utf8'))).columns.map((c) => c.header)).toEqual(['process', 'bwrap']);
  }, 240_000);
});

describe('sandcheck matrix usage', () => {
  it('nothing to compare, or a directory without scorecards, is a usage error (exit 3)', async () => {
    const out = await tempOut();
    const none = await sandcheck(['matrix', '--out', out]);
    expect(none.exitCode, none.all).toBe(3);
    expect(none.stderr).toContain('USAGE');
    const bad = await sandcheck(['matrix', out, '--out', join(out, 'm')]);
    expect(bad.exitCode, bad.all).toBe(3);
  });
});
