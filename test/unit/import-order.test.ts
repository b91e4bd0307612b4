import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { LAYERS, importGraph, layerViolations, fileCycles } from '../helpers/import-graph.js';

/**
 * The one direction of imports (DESIGN.md, "Layout"): a folder imports only itself and the folders before it in
 * LAYERS, and no files import each other in a loop. bench/, scripts/, examples/, test/ and the package entry may
 * import anything.
 */

const made: string[] = [];
afterAll(async () => {
  for (const d of made) await rm(d, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'sandcheck-layers-'));
  made.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

describe('the import order', () => {
  it('holds on this tree: no import runs against core → model → lab → backends → probes → tasks → suites → harness → reports → adapter → cli, and no files import each other in a loop', async () => {
    const graph = await importGraph(packageRoot());
    // The graph is read at all: every layer has files, and imports between layers were seen.
    for (const layer of LAYERS)
      expect(
        graph.files.some((f) => f.startsWith(`${layer}/`)),
        layer,
      ).toBe(true);
    expect(graph.edges.filter((e) => e.from.split('/')[0] !== e.to.split('/')[0]).length).toBeGreaterThan(500);
    expect(layerViolations(graph).map((v) => `${v.from} -> ${v.to}`)).toEqual([]);
    expect(fileCycles(graph)).toEqual([]);
  });

  it('fails on one planted backward import, type-only and dynamic ones included, and on a loop inside a folder', async () => {
    const clean = await tree({
      'core/errors.ts': 'export const E = 1;\n',
      'model/policy.ts': "import { E } from '../core/errors.js';\nexport const P = E;\n",
      'cli/main.ts': "import { P } from '../model/policy.js';\nexport const M = P;\n",
    });
    expect(layerViolations(await importGraph(clean))).toEqual([]);
    const planted = await tree({
      'core/errors.ts': "import type { P } from '../model/policy.js';\nexport const E = 1;\nexport type Q = P;\n",
      'model/policy.ts': "export const P = 1;\nexport async function late() {\n  return import('../cli/main.js');\n}\n",
      'cli/main.ts': 'export const M = 1;\n',
      'lab/a.ts': "import { B } from './b.js';\nexport const A = B;\n",
      'lab/b.ts': "export { A as B } from './a.js';\n",
    });
    const graph = await importGraph(planted);
    expect(
      layerViolations(graph)
        .map((v) => `${v.from} -> ${v.to}`)
        .sort(),
    ).toEqual(['core/errors.ts -> model/policy.ts', 'model/policy.ts -> cli/main.ts']);
    expect(fileCycles(graph)).toEqual([['lab/a.ts', 'lab/b.ts']]);
  });
});
