import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded the first time it is used rather than when the module that names it is
 * imported: the probe catalogue (`sandcheck list`) imports the task predicates but never runs them.
 */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
