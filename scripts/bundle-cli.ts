// The `sandcheck` bin as one ES module bundle (run after `tsc -p tsconfig.build.json`, whose
// dist/cli/main.js it replaces): Node 20 has no module compile cache, and resolving and loading the ~400 modules of
// a run one by one cost about half a second. Each command's module stays its own chunk, loaded when the
// command runs, so `--version` and `list` load no more than before. dist/ keeps tsc's output for the
// library entry, the lab server process (dist/lab/decoys/lab-server.js) and the compiled probe specs.
import { chmod, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'cli');
await rm(join(outdir, 'chunks'), { recursive: true, force: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { main: 'cli/main.ts' },
  outdir,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // dockerode loads native addons (ssh2, cpu-features) by relative path. A CommonJS package loaded by `await import()`
  // (yaml) would keep only its default export in a split chunk, where Node gives its named ones too. Both stay in node_modules.
  external: ['dockerode', 'yaml'],
  // The CommonJS dependencies inside the bundle call require() for Node's built-in modules.
  banner: { js: "import { createRequire as __sandcheckRequire } from 'node:module';\nconst require = __sandcheckRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
  write: true,
  metafile: true,
});

// A chunk that is nothing but a CommonJS package's default export is such a dynamic import: refuse the bundle.
const lost = await Promise.all(
  Object.keys(result.metafile.outputs)
    .filter((f) => f.endsWith('.js'))
    .map(async (f) => ((await readFile(join(root, f), 'utf8')).match(/^export default require_\w+\(\);?$/m) ? f : undefined)),
);
const bad = lost.filter((f) => f !== undefined);
if (bad.length > 0) {
  process.stderr.write(`bundle-cli: a CommonJS package is loaded with import() (add it to external): ${bad.join(', ')}\n`);
  process.exit(1);
}
// Runnable by its shebang, as npm makes an installed bin (the checkout's own node_modules/.bin/sandcheck links here).
await chmod(join(outdir, 'main.js'), 0o755);
