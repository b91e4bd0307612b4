import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { SandcheckError } from '../../core/errors.js';
import { packageRoot } from '../../core/paths.js';
import type { Waiver } from '../../model/waiver.js';
import { exitCodeFor } from '../../harness/scorecard-builder.js';
import { applyRunWaivers, evidenceFingerprint, isExpired, loadWaivers, utcDay, waiverNotices } from '../../harness/waivers.js';
import { securityJunit } from '../../reports/junit-report.js';
import { validateScorecard } from '../../reports/validate.js';
import { tempOut } from '../helpers/cli.js';
import { fabricatedRun, secResult } from './gate-fixtures.js';

async function file(name: string, text: string): Promise<string> {
  const path = join(await tempOut(), name);
  await writeFile(path, text);
  return path;
}

const TODAY = '2026-06-15';
const W: Waiver = { probe: 'fork-bomb', backend: 'bwrap', reason: 'pids | <b>off</b> for now', owner: 'alice', expires: '2026-12-31' };
const results = () => [secResult('fork-bomb', 'crossed'), secResult('identity-uid', 'held'), secResult('secret-decoy-file', 'crossed')];

function cardWith(waivers: Waiver[], today = TODAY) {
  const applied = applyRunWaivers(results(), 'bwrap', waivers, today);
  return { ...applied, card: fabricatedRun('run', applied.results) };
}

describe('waivers in a run', () => {
  it('a live waiver marks the crossing waived: verdict kept, counted in summary.waived, not in the exit code', () => {
    const only = cardWith([{ ...W }, { ...W, probe: 'secret-decoy-file' }]);
    const r = only.card.security.results.find((x) => x.id === 'fork-bomb');
    expect(r).toMatchObject({ verdict: 'crossed', waiver: { reason: W.reason, owner: 'alice', expires: '2026-12-31' } });
    expect(only.card.security.summary).toMatchObject({ crossed: 2, waived: 2 });
    expect(exitCodeFor(only.card.security, only.card.task)).toBe(0);
    expect(validateScorecard('security', only.card.security)).toMatchObject({ valid: true });
    // One crossing still unwaived: the run fails.
    const one = cardWith([W]);
    expect(one.card.security.summary.waived).toBe(1);
    expect(exitCodeFor(one.card.security, one.card.task)).toBe(1);
  });

  it('JUnit: a waived crossing is <skipped message="waived: reason (owner, expires …)">, escaped', () => {
    const xml = securityJunit(cardWith([W]).card.security);
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(xml) as {
      testsuites: { testsuite: { testcase: { '@name': string; skipped?: { '@message': string }; failure?: unknown }[] } };
    };
    const cases = doc.testsuites.testsuite.testcase;
    const waived = cases.find((c) => c['@name'].startsWith('fork-bomb'));
    expect(waived?.skipped?.['@message']).toBe('waived: pids | <b>off</b> for now (alice, expires 2026-12-31)');
    expect(waived?.failure).toBeUndefined();
    expect(cases.find((c) => c['@name'].startsWith('secret-decoy-file'))?.failure).toBeDefined();
    // Attribute text is entity-escaped (CDATA bodies may hold it raw).
    expect(xml).toMatch(/<skipped message="waived: pids \| &lt;b>off&lt;\/b> for now \(alice, expires 2026-12-31\)"\/>/);
  });

  it('an expired waiver is not applied and is named; backend and fingerprint filters hold', () => {
    const expired = cardWith([{ ...W, expires: '2026-06-14' }]);
    expect(expired.card.security.summary.waived).toBe(0);
    expect(exitCodeFor(expired.card.security, expired.card.task)).toBe(1);
    expect(waiverNotices(expired.uses)).toEqual([expect.stringContaining('waiver for fork-bomb on bwrap expired on 2026-06-14')]);
    expect(cardWith([{ ...W, backend: 'gvisor' }]).card.security.summary.waived).toBe(0);
    const fp = evidenceFingerprint(secResult('fork-bomb', 'crossed'));
    expect(cardWith([{ ...W, fingerprint: fp }]).card.security.summary.waived).toBe(1);
    expect(cardWith([{ ...W, fingerprint: '0123456789abcdef' }]).card.security.summary.waived).toBe(0);
  });

  it('a fingerprinted waiver whose finding now has other evidence: not applied, and the notice says the fingerprint differs and gives the new one', () => {
    const now = evidenceFingerprint(secResult('fork-bomb', 'crossed'));
    const stale = cardWith([{ ...W, fingerprint: '0123456789abcdef' }]);
    expect(stale.card.security.summary.waived).toBe(0);
    expect(exitCodeFor(stale.card.security, stale.card.task)).toBe(1);
    expect(stale.uses[0]).toMatchObject({ status: 'unused', matched: [], fingerprintNow: [now] });
    const [notice, ...rest] = waiverNotices(stale.uses, TODAY);
    expect(rest).toEqual([]);
    expect(notice).toContain('waiver for fork-bomb on bwrap (owner alice) matched nothing');
    expect(notice).toContain(`its fingerprint 0123456789abcdef differs from the finding's, which is now ${now}`);
    expect(notice).not.toMatch(/unused waiver/);
    // Another backend's finding is no reason to keep it: plain unused. A waiver with no fingerprint never says so.
    const elsewhere = applyRunWaivers(results(), 'gvisor', [{ ...W, fingerprint: '0123456789abcdef' }], TODAY);
    expect(elsewhere.uses[0]?.fingerprintNow).toBeUndefined();
    expect(waiverNotices(elsewhere.uses, TODAY)[0]).toMatch(
      /^unused waiver for fork-bomb on bwrap \(owner alice\): it matched nothing that still fails, remove it$/,
    );
    expect(cardWith([{ ...W, probe: 'identity-uid', fingerprint: '0123456789abcdef' }]).uses[0]?.fingerprintNow).toBeUndefined();
    // Past its day as well: both are said.
    expect(waiverNotices(cardWith([{ ...W, fingerprint: '0123456789abcdef', expires: '2026-01-01' }]).uses, TODAY)[0]).toContain(
      `(owner alice, expired on 2026-01-01) matched nothing: its fingerprint 0123456789abcdef differs from the finding's, which is now ${now}`,
    );
  });

  it('a waiver for a held probe does nothing and is reported unused', () => {
    const run = cardWith([{ ...W, probe: 'identity-uid' }]);
    expect(run.card.security.summary.waived).toBe(0);
    expect(run.uses[0]?.status).toBe('unused');
    expect(waiverNotices(run.uses)[0]).toMatch(/unused waiver for identity-uid/);
  });
});

describe('waiver files', () => {
  it('YAML (bare list) and JSON (under waivers:) load', async () => {
    const yaml = await file('w.yaml', '- probe: fork-bomb\n  reason: accepted\n  owner: alice\n  expires: 2026-12-31\n');
    expect(await loadWaivers(yaml)).toEqual([{ probe: 'fork-bomb', reason: 'accepted', owner: 'alice', expires: '2026-12-31' }]);
    const json = await file('w.json', JSON.stringify({ waivers: [{ ...W, fingerprint: '0123456789abcdef' }] }));
    expect(await loadWaivers(json)).toHaveLength(1);
  });

  it('the example file loads, and its waiver is live (an expired one would fail every run that copied it)', async () => {
    const example = await loadWaivers(join(packageRoot(), 'examples', 'ci', 'waivers.yaml'));
    expect(example.length).toBeGreaterThan(0);
    for (const w of example) expect(isExpired(w, utcDay()), `${w.probe} expires ${w.expires}`).toBe(false);
  });

  it('a bad date, a missing owner or an unknown key is a config error naming the field', async () => {
    const bad = await file('bad.yaml', 'waivers:\n  - probe: fork-bomb\n    reason: x\n    expires: 2026-02-30\n    color: red\n');
    const err = await loadWaivers(bad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandcheckError);
    expect((err as SandcheckError).code).toBe('CONFIG_INVALID');
    expect((err as SandcheckError).isUsage).toBe(true);
    expect((err as SandcheckError).message).toMatch(/expires/);
    expect((err as SandcheckError).message).toMatch(/owner/);
    expect((err as SandcheckError).hint).toMatch(/probe, reason, owner and expires/);
  });
});
