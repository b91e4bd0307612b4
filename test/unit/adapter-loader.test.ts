import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendNames, isBuiltinBackend, loadBackend } from '../../backends/registry.js';
import { SandcheckError } from '../../core/errors.js';
import { ADAPTER_API_VERSION } from '../../adapter/index.js';

let dir: string;
const mod = async (name: string, source: string): Promise<string> => {
  const path = join(dir, name);
  await writeFile(path, source);
  return path;
};

// A backend object in plain JS: enough shape for the loader, nothing is ever created.
const BACKEND = `{ name: 'mod', description: 'a module backend', capabilities: () => ({ isolation: 'sandbox', enforces: [] }), preflight: async () => {}, create: async () => { throw new Error('unused'); } }`;

async function refusal(spec: string, options?: unknown): Promise<SandcheckError> {
  const err: unknown = await loadBackend(spec, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandcheckError);
  return err as SandcheckError;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandcheck-loader-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('--backend <module>', () => {
  it('built-in names stay built-in; anything else is a module', () => {
    expect(isBuiltinBackend('process')).toBe(true);
    expect(isBuiltinBackend('./process')).toBe(false);
    expect(isBuiltinBackend('constructor')).toBe(false);
  });

  it('loads the default export as the factory and hands it the --backend-config options', async () => {
    const path = await mod('ok.mjs', `export default (options) => ({ ...${BACKEND}, description: JSON.stringify(options) });`);
    const backend = await loadBackend(path, { uid: 4242, nested: { a: [1] } });
    expect(backend.name).toBe('mod');
    expect(JSON.parse(backend.description)).toEqual({ uid: 4242, nested: { a: [1] } });
  });

  it('accepts an async factory and a path relative to the working directory', async () => {
    await mod('async.mjs', `export default async () => (${BACKEND});`);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect((await loadBackend('./async.mjs')).name).toBe('mod');
    } finally {
      process.chdir(cwd);
    }
  });

  it('a module without a default factory is a usage error (exit 3) that says what the default export must be', async () => {
    const none = await refusal(await mod('none.mjs', 'export const backend = 1;'));
    expect(none.code).toBe('ADAPTER_INVALID');
    expect(none.isUsage).toBe(true);
    expect(none.message).toMatch(/default export must be the adapter factory, a function \(options\) => Backend \| Promise<Backend>; got no default export/);
    const object = await refusal(await mod('object.mjs', `export default ${BACKEND};`));
    expect(object.message).toMatch(/got object/);
  });

  it('a factory that returns no Backend, or throws, is refused before anything runs', async () => {
    const shapeless = await refusal(await mod('shapeless.mjs', "export default () => ({ name: 'x' });"));
    expect(shapeless.code).toBe('ADAPTER_INVALID');
    const throws = await refusal(await mod('throws.mjs', "export default (o) => { throw new Error('uid: expected a positive integer'); };"), { uid: -1 });
    expect(throws.code).toBe('CONFIG_INVALID');
    expect(throws.message).toMatch(/uid: expected a positive integer/);
  });

  it('a module written for another major adapter API version is refused', async () => {
    const major = Number(ADAPTER_API_VERSION.split('.')[0]);
    const err = await refusal(await mod('future.mjs', `export const adapterApiVersion = '${major + 1}.0.0';\nexport default () => (${BACKEND});`));
    expect(err.code).toBe('ADAPTER_INVALID');
    const same = await mod('same.mjs', `export const adapterApiVersion = '${major}.9.0';\nexport default () => (${BACKEND});`);
    expect((await loadBackend(same)).name).toBe('mod');
  });

  it('a path that does not exist or a package that does not resolve is an unknown backend', async () => {
    expect((await refusal(join(dir, 'missing.mjs'))).code).toBe('BACKEND_UNKNOWN');
    const pkg = await refusal('sandcheck-no-such-adapter-package');
    expect(pkg.code).toBe('BACKEND_UNKNOWN');
    expect(pkg.hint).toBe(
      `choose one of: ${backendNames().join(', ')}; or a module path (./my-adapter.mjs) or package name whose default export is the adapter factory`,
    );
  });

  it("a SandcheckError from the adapter's own copy of the package keeps its code", async () => {
    const path = await mod(
      'foreign.mjs',
      `class SandcheckError extends Error { constructor(code, message, o = {}) { super(message); this.name = 'SandcheckError'; this.code = code; this.hint = o.hint; } }
export default () => ({ ...${BACKEND}, preflight: async () => { throw new SandcheckError('BACKEND_UNAVAILABLE', 'needs root', { hint: 'run as root' }); } });`,
    );
    const backend = await loadBackend(path);
    const err: unknown = await backend.preflight().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SandcheckError);
    expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE', hint: 'run as root', isUsage: true });
  });
});
