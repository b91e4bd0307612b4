import type { Backend } from '../../model/backend-contract.js';

/**
 * Gives a built-in backend its `appliedOptions()`: the options exactly as its own schema parsed them (defaults filled
 * in), as JSON. The card records these, never the file's text: what ran, not what was written.
 */
export function withAppliedOptions<T extends Backend>(backend: T, options: unknown): T {
  const snapshot: unknown = JSON.parse(JSON.stringify(options ?? {}) ?? '{}');
  Object.defineProperty(backend, 'appliedOptions', { value: () => snapshot, enumerable: false, configurable: true });
  return backend;
}
