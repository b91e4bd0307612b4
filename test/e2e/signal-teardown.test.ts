import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { CLI, tempOut } from '../helpers/cli.js';

/**
 * The process control with a dispose() that holds until the test lets it go: the harness is mid-cleanup
 * for exactly as long as the test wants, whatever the machine's load.
 */
const ADAPTER = (processBackend: string) => `
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
export default async function (options) {
  const inner = await (await import(${JSON.stringify(processBackend)})).default();
  return {
    name: 'slow-dispose', description: 'process control whose dispose waits for a release file',
    capabilities: (p) => inner.capabilities(p), preflight: () => inner.preflight(), create: (p, c) => inner.create(p, c),
    async dispose() {
      writeFileSync(join(options.dir, 'dispose-started'), '');
      const until = Date.now() + 60000;
      while (!existsSync(join(options.dir, 'release')) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      writeFileSync(join(options.dir, 'dispose-finished'), '');
    },
  };
}
`;

async function waitFor(path: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > until) throw new Error(`${path} did not appear within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('signals during teardown (issue 16)', () => {
  it("SIGINT twice while the backend is being disposed: cleanup still finishes, the exit status is the run's", async () => {
    const dir = await tempOut();
    await writeFile(join(dir, 'adapter.mjs'), ADAPTER(pathToFileURL(join(packageRoot(), 'dist', 'backends', 'process', 'index.js')).href));
    await writeFile(join(dir, 'options.json'), JSON.stringify({ dir }));
    const child = execa(
      process.execPath,
      [
        CLI,
        'run',
        '--backend',
        join(dir, 'adapter.mjs'),
        '--backend-config',
        join(dir, 'options.json'),
        '--skip-adapter-check',
        '--policy',
        'ci',
        '--only',
        'identity-uid',
        '--out',
        join(dir, 'out'),
      ],
      {
        reject: false,
        all: true,
        env: { CI: 'true' },
      },
    );
    await waitFor(join(dir, 'dispose-started'), 90_000);
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    // Still alive, still cleaning up: default signal behaviour would have ended it by now.
    expect(child.exitCode).toBeNull();
    expect(existsSync(join(dir, 'dispose-finished'))).toBe(false);
    await writeFile(join(dir, 'release'), '');
    const res = await child;
    expect(res.signal, res.all).toBeUndefined();
    expect(existsSync(join(dir, 'dispose-finished'))).toBe(true);
    expect(res.all).toContain('still cleaning up');
    // The reports were written before the signals: the run's own status (the control crosses: 1), not 130.
    expect(res.exitCode, res.all).toBe(1);
    expect(JSON.parse(await readFile(join(dir, 'out', 'security.json'), 'utf8'))).toMatchObject({ summary: { crossed: 1 } });
  }, 120_000);
});
