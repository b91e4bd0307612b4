import { readdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** The source folders in import order: each may import only itself and the folders before it. */
export const LAYERS = ['core', 'model', 'lab', 'backends', 'probes', 'tasks', 'suites', 'harness', 'reports', 'adapter', 'cli'] as const;

export interface ImportGraph {
  /** Source files, relative to the root. */
  files: string[];
  /** Every relative import between two source files (static, type-only, re-export and dynamic). */
  edges: { from: string; to: string }[];
}

// `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')`.
const IMPORT = /(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

async function sources(root: string, dir: string): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(root, path)));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function target(root: string, from: string, spec: string): string | undefined {
  const base = normalize(join(dirname(from), spec));
  for (const c of [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')]) if (existsSync(join(root, c))) return c;
  return undefined;
}

/** The import graph of the layered folders under `root`. */
export async function importGraph(root: string): Promise<ImportGraph> {
  const files = (await Promise.all(LAYERS.map((l) => sources(root, l)))).flat();
  const edges: ImportGraph['edges'] = [];
  for (const from of files) {
    const text = await readFile(join(root, from), 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const to = target(root, from, m[1] ?? m[2] ?? '');
      if (to !== undefined && !relative(root, join(root, to)).startsWith('..')) edges.push({ from, to });
    }
  }
  return { files, edges };
}

const layerOf = (file: string): number => LAYERS.indexOf(file.split('/')[0] as (typeof LAYERS)[number]);

/** Imports of a folder that comes later in LAYERS (or of a file outside the layered folders). */
export function layerViolations(graph: ImportGraph): { from: string; to: string }[] {
  return graph.edges.filter((e) => {
    const to = layerOf(e.to);
    return to < 0 || to > layerOf(e.from);
  });
}

/** Every set of files that import each other in a loop (strongly connected, two or more files), each sorted. */
export function fileCycles(graph: ImportGraph): string[][] {
  const next = new Map<string, string[]>();
  for (const e of graph.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  // Tarjan's strongly connected components.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      for (;;) {
        const w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const f of graph.files) if (!idx.has(f)) visit(f);
  return out.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}
