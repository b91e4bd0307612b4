import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ADAPTER_API_VERSION } from '../../model/adapter-version.js';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import type { Backend } from '../../model/backend-contract.js';

const FACTORY_SHAPE = 'export default function createBackend(options: unknown): Backend | Promise<Backend>';

const looksLikePath = (spec: string): boolean => spec.startsWith('.') || isAbsolute(spec) || /\.(m|c)?[jt]s$/.test(spec);

/** The module's URL: a path relative to the working directory, or a package resolved from it. */
function moduleUrl(spec: string, builtins: readonly string[]): string {
  const hint = `choose one of: ${builtins.join(', ')}; or a module path (./my-adapter.mjs) or package name whose default export is the adapter factory`;
  if (looksLikePath(spec)) {
    const abs = resolve(process.cwd(), spec);
    if (!existsSync(abs)) throw new SandcheckError('BACKEND_UNKNOWN', `unknown backend "${spec}": not a built-in name, and there is no file ${abs}`, { hint });
    return pathToFileURL(abs).href;
  }
  try {
    return pathToFileURL(createRequire(join(process.cwd(), 'package.json')).resolve(spec)).href;
  } catch {
    throw new SandcheckError(
      'BACKEND_UNKNOWN',
      `unknown backend "${spec}": not a built-in name, and no package of that name can be resolved from ${process.cwd()}`,
      { hint },
    );
  }
}

function isBackend(value: unknown): value is Backend {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['name'] === 'string' && typeof v['description'] === 'string' && ['capabilities', 'preflight', 'create'].every((k) => typeof v[k] === 'function')
  );
}

/** Loads a module adapter: its default export is called with the parsed --backend-config options. */
export async function loadModuleBackend(spec: string, options: unknown, builtins: readonly string[]): Promise<Backend> {
  const url = moduleUrl(spec, builtins);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw new SandcheckError('ADAPTER_INVALID', `cannot load the adapter module ${spec}: ${errorMessage(err)}`, { cause: err });
  }
  const factory = mod['default'];
  if (typeof factory !== 'function') {
    throw new SandcheckError(
      'ADAPTER_INVALID',
      `${spec}: the default export must be the adapter factory, a function (options) => Backend | Promise<Backend>; got ${factory === undefined ? 'no default export' : typeof factory}`,
      {
        hint: `${FACTORY_SHAPE}   (types: import type { Backend } from 'sandcheck/adapter'; see docs/adapters.md)`,
      },
    );
  }
  const declared = mod['adapterApiVersion'];
  if (typeof declared === 'string' && declared.split('.')[0] !== ADAPTER_API_VERSION.split('.')[0]) {
    throw new SandcheckError('ADAPTER_INVALID', `${spec} was written for adapter API ${declared}; this sandcheck speaks ${ADAPTER_API_VERSION}`, {
      hint: 'update the adapter or use a sandcheck of the matching major version',
    });
  }
  let backend: unknown;
  try {
    backend = await (factory as (o: unknown) => unknown)(options ?? {});
  } catch (err) {
    if (err instanceof SandcheckError) throw err;
    throw new SandcheckError('CONFIG_INVALID', `the adapter factory of ${spec} refused its options: ${errorMessage(err)}`, { cause: err });
  }
  if (!isBackend(backend)) {
    throw new SandcheckError(
      'ADAPTER_INVALID',
      `${spec}: the factory did not return a Backend (needs name, description, capabilities(), preflight(), create())`,
      { hint: FACTORY_SHAPE },
    );
  }
  return adopted(backend);
}

/**
 * A module adapter imports its own copy of 'sandcheck/adapter' when it has one in its node_modules:
 * its SandcheckErrors are then not instances of ours. Keep their code when it means "cannot run here".
 */
function adopt(err: unknown): unknown {
  if (err instanceof SandcheckError || !(err instanceof Error) || err.name !== 'SandcheckError') return err;
  const { code, hint } = err as Error & { code?: unknown; hint?: unknown };
  const kept = code === 'BACKEND_UNAVAILABLE' || code === 'CONFIG_INVALID' ? code : 'HARNESS';
  return new SandcheckError(kept, err.message, { ...(typeof hint === 'string' ? { hint } : {}), cause: err });
}

function adopted(b: Backend): Backend {
  const openRun = b.openRun?.bind(b);
  const prepare = b.prepare?.bind(b);
  const dispose = b.dispose?.bind(b);
  return {
    name: b.name,
    description: b.description,
    capabilities: (policy) => b.capabilities(policy),
    preflight: () =>
      Promise.resolve()
        .then(() => b.preflight())
        .catch((err: unknown) => Promise.reject(adopt(err))),
    create: (policy, ctx) =>
      Promise.resolve()
        .then(() => b.create(policy, ctx))
        .catch((err: unknown) => Promise.reject(adopt(err))),
    ...(openRun ? { openRun } : {}),
    ...(prepare
      ? {
          prepare: (policy: Parameters<typeof prepare>[0]) =>
            Promise.resolve()
              .then(() => prepare(policy))
              .catch((err: unknown) => Promise.reject(adopt(err))),
        }
      : {}),
    ...(dispose ? { dispose } : {}),
  };
}
