import type { SecurityProbe } from '../model/probe.js';
import type { SecurityResult, SecurityScorecard } from '../model/scorecard.js';
import { allowlistSuite } from '../suites/allowlist.js';
import { securitySuite } from '../suites/security.js';

const BUILT_IN: readonly SecurityProbe[] = [...securitySuite, ...allowlistSuite];

/** The ATT&CK and CWE ids of a result, from the result itself or else from the built-in probe of the same id. */
export function threatOf(result: SecurityResult, probes: readonly SecurityProbe[] = BUILT_IN): { attack: string[]; cwe: string[] } {
  const probe = probes.find((p) => p.id === result.id);
  return { attack: result.attack ?? [...(probe?.attack ?? [])], cwe: result.cwe ?? [...(probe?.cwe ?? [])] };
}

/** Every result of a built-in probe carries the probe's ATT&CK and CWE ids (results of other probes are left as they are). */
export function withThreatMapping(card: SecurityScorecard, probes: readonly SecurityProbe[] = BUILT_IN): SecurityScorecard {
  const results = card.results.map((r) => {
    const { attack, cwe } = threatOf(r, probes);
    return { ...r, ...(attack.length > 0 ? { attack } : {}), ...(cwe.length > 0 ? { cwe } : {}) };
  });
  return { ...card, results };
}
