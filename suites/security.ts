import type { SecurityProbe } from '../model/probe.js';
import { builtInSpecs } from './index.generated.js';

const CATEGORY_ORDER = ['files', 'identity', 'resources', 'network', 'lifecycle'] as const;

/**
 * Every built-in security probe (suites/index.generated.ts) but the opt-in ones, by category (files, identity,
 * resources, network, lifecycle) and then id: a probe joins the suite by having its folder.
 */
export const securitySuite: readonly SecurityProbe[] = builtInSpecs
  .filter((s): s is SecurityProbe => s.kind === 'security' && s.optIn !== true)
  .sort((a, b) => CATEGORY_ORDER.indexOf(a.category) - CATEGORY_ORDER.indexOf(b.category) || a.id.localeCompare(b.id));
