import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import { ThreatMappingSchema } from '../../model/probe.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { securityScorecard } from '../../harness/scorecard-builder.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { validateScorecard } from '../../reports/validate.js';
import { allowlistSuite, securitySuite } from '../../suites/index.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

function result(id: string, extra: Partial<SecurityResult> = {}): SecurityResult {
  return {
    id,
    title: id,
    category: 'files',
    policyItem: 'files.hostPaths',
    severity: 'high',
    verdict: 'crossed',
    reason: 'r',
    remediation: 'm',
    evidence: [],
    durationMs: 1,
    ...extra,
  };
}

function card(results: SecurityResult[]) {
  const meta = { runId: 'rthreat001', startedAt: new Date(), finishedAt: new Date(), interrupted: false };
  return securityScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, results);
}

describe('ATT&CK and CWE mapping of the security probes', () => {
  it('every registered security probe names at least one ATT&CK technique and one CWE, in their id formats', () => {
    const broken = securitySuite.flatMap((p) => {
      const check = ThreatMappingSchema.safeParse({ attack: p.attack, cwe: p.cwe });
      return check.success ? [] : [`${p.id}: ${check.error.issues.map((i) => i.message).join('; ')}`];
    });
    expect(broken).toEqual([]);
    expect(securitySuite.length).toBeGreaterThan(40);
  });

  it('the opt-in allowlist probes carry ids too, and their results get them in a scorecard', () => {
    for (const p of allowlistSuite) expect(ThreatMappingSchema.safeParse({ attack: p.attack, cwe: p.cwe }).success, p.id).toBe(true);
    expect(allowlistSuite.find((p) => p.id === 'allowlist-host-sni')?.attack).toContain('T1090.004');
    const mapped = withThreatMapping(card([result('allowlist-rebinding', { category: 'network', policyItem: 'network.egress' })]));
    expect(mapped.results[0]).toMatchObject({ attack: ['T1552.005', 'T1090'], cwe: ['CWE-918', 'CWE-367'] });
  });

  it('the id formats refuse near misses and empty lists', () => {
    for (const bad of [
      { attack: [], cwe: ['CWE-22'] },
      { attack: ['T1552'], cwe: [] },
      { attack: ['T155'], cwe: ['CWE-22'] },
      { attack: ['T1552.5'], cwe: ['CWE-22'] },
      { attack: ['t1552'], cwe: ['CWE-22'] },
      { attack: ['T1552'], cwe: ['CWE22'] },
      { attack: ['T1552'], cwe: ['cwe-22'] },
    ]) {
      expect(ThreatMappingSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(ThreatMappingSchema.safeParse({ attack: ['T1552.005', 'T1611'], cwe: ['CWE-918'] }).success).toBe(true);
  });

  it('a few probes carry the technique their attack is known by', () => {
    const byId = new Map(securitySuite.map((p) => [p.id, p]));
    expect(byId.get('metadata-ipv4')?.attack).toContain('T1552.005');
    expect(byId.get('metadata-ipv4')?.cwe).toContain('CWE-918');
    expect(byId.get('dns-exfil')?.attack).toContain('T1071.004');
    expect(byId.get('ptrace-host-decoy')?.attack).toContain('T1055.008');
    expect(byId.get('zip-slip')?.cwe).toContain('CWE-22');
    expect(byId.get('fork-bomb')?.cwe).toContain('CWE-770');
  });

  it('scorecard results of built-in probes get the ids, others are left alone, and the card still matches its published schema', () => {
    const mapped = withThreatMapping(card([result('metadata-ipv4'), result('my-own-probe')]));
    expect(mapped.results[0]).toMatchObject({ attack: ['T1552.005'], cwe: ['CWE-918'] });
    expect(mapped.results[1]).not.toHaveProperty('attack');
    expect(mapped.results[1]).not.toHaveProperty('cwe');
    expect(validateScorecard('security', mapped)).toMatchObject({ valid: true });
  });

  it('the published schema refuses a result with a malformed ATT&CK or CWE id', () => {
    expect(validateScorecard('security', card([result('x', { attack: ['T1552.5'] })])).valid).toBe(false);
    expect(validateScorecard('security', card([result('x', { cwe: ['CWE-x'] })])).valid).toBe(false);
  });
});
