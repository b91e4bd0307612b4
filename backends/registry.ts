import { SandcheckError } from '../harness/errors.js';
import type { Backend } from './contract.js';

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
    description: 'bubblewrap: namespaces, setpriv to a dedicated uid, cgroup limits, tmpfs workspace',
    load: async (options) => (await import('./bwrap/index.js')).default((options ?? {}) as Record<string, unknown>),
    install: 'sudo npm run setup   (apt-get install bubblewrap util-linux)',
  },
  'docker-default': {
    description: 'Docker (runc) as a team gets it from `docker run` with only the policy limits: root, default bridge; claims the policy the way that team trusts it',
    load: async (options) => (await import('./docker/index.js')).default({ assumePolicy: true, ...asObject(options), profile: 'docker-default' }),
    install: 'apt-get install -y docker.io   (sandcheck starts its own dockerd inside the run\'s lab)',
  },
  'docker-hardened': {
    description: 'Docker (runc) hardened: non-root, no capabilities, read-only root, network none, no-new-privileges, limits',
    load: async (options) => (await import('./docker/index.js')).default({ ...asObject(options), profile: 'docker-hardened' }),
    install: 'apt-get install -y docker.io   (sandcheck starts its own dockerd inside the run\'s lab)',
  },
  gvisor: {
    description: 'gVisor (runsc) under Docker, hardened as docker-hardened',
    load: async (options) => (await import('./docker/index.js')).default({ ...asObject(options), profile: 'gvisor' }),
    install: 'apt-get install -y docker.io runsc',
  },
  process: {
    description: 'unsandboxed control: plain host process (no isolation at all)',
    load: async () => (await import('./process/index.js')).default(),
    install: 'nothing (needs python3)',
  },
};

function asObject(options: unknown): Record<string, unknown> {
  return typeof options === 'object' && options !== null && !Array.isArray(options) ? (options as Record<string, unknown>) : {};
}

export function backendNames(): string[] {
  return Object.keys(REGISTRY);
}

export function describeBackends(): { name: string; description: string; install: string }[] {
  return Object.entries(REGISTRY).map(([name, b]) => ({ name, description: b.description, install: b.install }));
}

export async function loadBackend(name: string, options?: unknown): Promise<Backend> {
  const entry = REGISTRY[name];
  if (!entry) {
    throw new SandcheckError('BACKEND_UNKNOWN', `unknown backend "${name}"`, { hint: `choose one of: ${backendNames().join(', ')}` });
  }
  return entry.load(options);
}

/** bwrap where it can really start boxes, otherwise the unsandboxed control (with a banner). */
export async function defaultBackend(): Promise<{ backend: Backend; fallbackReason?: string }> {
  try {
    const bwrap = await loadBackend('bwrap');
    await bwrap.preflight();
    return { backend: bwrap };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { backend: await loadBackend('process'), fallbackReason: reason };
  }
}
