import { SandcheckError } from '../harness/errors.js';
import type { Backend, BackendFactory } from './contract.js';

/** Name → lazily imported factory, so a backend's dependencies load only when it is chosen. */
const REGISTRY: Record<string, { description: string; load: BackendFactory }> = {
  process: {
    description: 'unsandboxed control: plain host process (no isolation at all)',
    load: async () => (await import('./process/index.js')).default(),
  },
};

export function backendNames(): string[] {
  return Object.keys(REGISTRY);
}

export function describeBackends(): { name: string; description: string }[] {
  return Object.entries(REGISTRY).map(([name, b]) => ({ name, description: b.description }));
}

export async function loadBackend(name: string): Promise<Backend> {
  const entry = REGISTRY[name];
  if (!entry) {
    throw new SandcheckError('BACKEND_UNKNOWN', `unknown backend "${name}"`, { hint: `choose one of: ${backendNames().join(', ')}` });
  }
  return entry.load();
}
