import { SandcheckError } from '../core/errors.js';
import type { Backend } from '../model/backend-contract.js';
import { loadModuleBackend } from './module/load-module.js';
import { PRESET_PREFIX, PRESETS } from './presets/catalog.js';

interface Entry {
  description: string;
  /** Options come from the user's --backend-config file; each backend validates its own with zod. */
  load(options: unknown): Promise<Backend>;
  /** The exact command that installs what this backend needs on Debian. */
  install: string;
}

/** Name → lazily imported factory, so a backend's dependencies load only when it is chosen. */
const REGISTRY: Record<string, Entry> = {
  bwrap: {
    description: 'bubblewrap: namespaces, setpriv to a dedicated uid, cgroup limits, a sized workspace (ext4 image or tmpfs)',
    load: async (options) => (await import('./bwrap/index.js')).default(asObject(options)),
    install: 'sudo npm run setup   (apt-get install bubblewrap util-linux)',
  },
  'docker-default': {
    description:
      'Docker (runc) as a team gets it from `docker run` with only the policy limits: root, default bridge; claims the policy the way that team trusts it',
    load: async (options) => (await import('./docker/index.js')).default({ assumePolicy: true, ...asObject(options), profile: 'docker-default' }),
    install: "apt-get install -y docker.io   (sandcheck starts its own dockerd inside the run's lab)",
  },
  'docker-hardened': {
    description: 'Docker (runc) hardened: non-root, no capabilities, read-only root, network none, no-new-privileges, limits',
    load: async (options) => (await import('./docker/index.js')).default({ ...asObject(options), profile: 'docker-hardened' }),
    install: "apt-get install -y docker.io   (sandcheck starts its own dockerd inside the run's lab)",
  },
  docker: {
    description:
      'Docker with your own container configuration (--backend-config FILE: Config/HostConfig keys as `docker inspect` prints them); claims derived from the settings unless declared',
    load: async (options) => (await import('./docker/index.js')).createContainerConfigBackend(options),
    install: "apt-get install -y docker.io   (sandcheck starts its own dockerd inside the run's lab)",
  },
  gvisor: {
    description: 'gVisor (runsc) under Docker, hardened as docker-hardened',
    load: async (options) => (await import('./docker/index.js')).default({ ...asObject(options), profile: 'gvisor' }),
    install: 'apt-get install -y docker.io runsc',
  },
  command: {
    description: 'a sandbox that ships a command line, described by --backend-config FILE (argv templates, claims; see examples/command-bwrap.yaml)',
    load: async (options) => (await import('./command/index.js')).default(options),
    install: 'the tool named in the configuration file (e.g. apt-get install bubblewrap); nsenter from util-linux for the lab',
  },
  process: {
    description: 'unsandboxed control: plain host process (no isolation at all)',
    load: async (options) => (await import('./process/index.js')).default(options),
    install: 'nothing (needs python3)',
  },
};

/** Options as a mapping; an empty file (null) is no options, and any other shape is refused, never dropped. */
function asObject(options: unknown): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new SandcheckError(
      'CONFIG_INVALID',
      `--backend-config: expected a mapping of options at the top level, got ${Array.isArray(options) ? 'a list' : typeof options === 'string' ? 'text' : `a ${typeof options}`}`,
      {
        hint: "write the options as YAML keys (see docs/adapters.md and the backend's schema under reports/schema)",
      },
    );
  }
  return options as Record<string, unknown>;
}

export function backendNames(): string[] {
  return Object.keys(REGISTRY);
}

/** Every built-in backend, then every preset (`preset:<name>`: a sandbox CLI run through the command backend, docs/presets.md). */
export function describeBackends(): { name: string; description: string; install: string }[] {
  return [
    ...Object.entries(REGISTRY).map(([name, b]) => ({ name, description: b.description, install: b.install })),
    ...PRESETS.map((p) => ({ name: `${PRESET_PREFIX}${p.name}`, description: p.summary, install: p.install })),
  ];
}

export function isBuiltinBackend(name: string): boolean {
  return Object.hasOwn(REGISTRY, name);
}

/**
 * A built-in backend by name; `rpc:<command>` an adapter process in any language (docs/rpc-protocol.md);
 * any other value is a module path or package name whose default export is the adapter factory
 * (docs/adapters.md).
 */
export async function loadBackend(name: string, options?: unknown): Promise<Backend> {
  if (name.startsWith('rpc:')) return (await import('./rpc/index.js')).createRpcBackend(name, options);
  if (name.startsWith(PRESET_PREFIX)) return (await import('./presets/preset-backend.js')).loadPreset(name.slice(PRESET_PREFIX.length), options);
  const entry = isBuiltinBackend(name) ? REGISTRY[name] : undefined;
  if (!entry) {
    if (name.trim() === '')
      throw new SandcheckError('BACKEND_UNKNOWN', 'empty backend name', { hint: `choose one of: ${backendNames().join(', ')}, or a module path` });
    return loadModuleBackend(name, options, backendNames());
  }
  return entry.load(options);
}

/**
 * bwrap where it can really start boxes, otherwise the unsandboxed control (with a banner). With options (a
 * --backend-config without --backend) they go to bwrap and are checked by its schema; bwrap being unusable is
 * then a refusal, since the control would silently drop them.
 */
export async function defaultBackend(options?: unknown): Promise<{ backend: Backend; fallbackReason?: string }> {
  if (options !== undefined) {
    const bwrap = await loadBackend('bwrap', options);
    try {
      await bwrap.preflight();
    } catch (err) {
      await bwrap.dispose?.().catch(() => undefined);
      throw new SandcheckError(
        'BACKEND_UNAVAILABLE',
        `--backend-config was given without --backend, and the default backend bwrap cannot run here (${err instanceof Error ? err.message : String(err)})`,
        {
          hint: 'name the backend the file is for with --backend, or install what `sandcheck doctor` lists',
        },
      );
    }
    return { backend: bwrap };
  }
  try {
    const bwrap = await loadBackend('bwrap');
    await bwrap.preflight();
    return { backend: bwrap };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { backend: await loadBackend('process'), fallbackReason: reason };
  }
}
