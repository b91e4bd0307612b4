import type { Backend } from '../model/backend-contract.js';

/**
 * Backends whose resource counters sandcheck's own code reads (the built-in backends and presets). Every other
 * backend (a module adapter, an rpc process, one an embedding hands to runSuite) reports counters as its claim:
 * the harness then reads the box's cgroups itself (harness/exec-payload.ts), and only that read is evidence.
 */
const OWN = new WeakSet<Backend>();

export function markOwnCounters<B extends Backend>(backend: B): B {
  OWN.add(backend);
  return backend;
}

export function countersReadBySandcheck(backend: Backend): boolean {
  return OWN.has(backend);
}
