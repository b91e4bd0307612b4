import type { SecurityProbe } from '../model/probe.js';
import { builtInSpecs } from './index.generated.js';

/**
 * Bypasses of a network allowlist (issue #17). Opt-in (`optIn: true` in their specs): selected with `--only <id>`
 * and not part of the default security suite, whose whole-suite expectations (every network probe crossed on the
 * control, held in an empty namespace, the preset measurements) assume network off, where these are not applicable.
 */
export const allowlistSuite: readonly SecurityProbe[] = builtInSpecs.filter((s): s is SecurityProbe => s.kind === 'security' && s.optIn === true);
