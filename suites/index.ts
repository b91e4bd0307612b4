import { SandcheckError } from '../core/errors.js';
import type { ProbeSpec } from '../model/probe.js';
import { allowlistSuite } from './allowlist.js';
import { securitySuite } from './security.js';
import { taskSuite } from './task.js';

export { allowlistSuite, securitySuite, taskSuite };

/** Probes that run only when named with --only (suites/allowlist.ts says why). */
export const optInProbes: readonly ProbeSpec[] = allowlistSuite;

export const allProbes = (extra: readonly ProbeSpec[] = []): ProbeSpec[] => {
  const builtIn = [...securitySuite, ...taskSuite, ...optInProbes];
  const clash = extra.find((e) => builtIn.some((b) => b.id === e.id));
  if (clash)
    throw new SandcheckError('CONFIG_INVALID', `task case id "${clash.id}" is already a built-in probe or task id`, { hint: 'rename the user task case' });
  return [...securitySuite, ...taskSuite, ...extra];
};

/** The whole suite (plus user task cases), or only the named ids, opt-in probes included (unknown ids are a usage error). */
export function selectProbes(only: readonly string[] | undefined, extra: readonly ProbeSpec[] = []): ProbeSpec[] {
  const all = allProbes(extra);
  if (!only || only.length === 0) return all;
  const known = new Map([...all, ...optInProbes].map((p) => [p.id, p]));
  const unknown = only.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new SandcheckError('PROBE_UNKNOWN', `unknown probe or task id: ${unknown.join(', ')}`, { hint: 'run `sandcheck list` to see the ids' });
  }
  return only.map((id) => known.get(id)).filter((p): p is ProbeSpec => p !== undefined);
}
