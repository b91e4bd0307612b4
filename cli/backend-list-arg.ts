import { SandcheckError } from '../core/errors.js';

/** `--backend a,b,c` (repeatable): names in order, each once; an empty name is a usage error. */
export function parseBackendList(value: string, previous: string[] = []): string[] {
  const names = value.split(',').map((s) => s.trim());
  if (names.some((n) => n === ''))
    throw new SandcheckError('USAGE', `--backend "${value}" has an empty name`, {
      hint: 'give backend names separated by commas, e.g. --backend process,bwrap',
    });
  return [...new Set([...previous, ...names])];
}
