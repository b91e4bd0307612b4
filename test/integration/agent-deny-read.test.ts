/**
 * read-denied-path (issue 40, the deny-list), shown able to fail: crossed on the `process` control and on bwrap with
 * denyReadPaths off but still claiming files.denyRead (misdeclare); not-applicable under ci where nothing claims it,
 * run unclaimed (and crossed) when the policy asks and the backend does not hide; held on hardened bwrap.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import createBwrapBackend, { type BwrapOptions } from '../../backends/bwrap/index.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import type { Backend } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { packageRoot } from '../../core/paths.js';
import { loadPolicy } from '../../harness/policy-loader.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const SKIP = await bwrapSkipReason();
const PREFIX = `raw${randomBytes(2).toString('hex')}`;
const AGENT = await loadPolicy(join(packageRoot(), 'examples', 'agent-policy.yaml'));
let seq = 0;

const explain = (r: SecurityResult | undefined): string =>
  r
    ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 400)}`).join('\n  ')}`
    : 'did not run';

async function runOn(backend: Backend | BwrapOptions, policy: Policy = AGENT): Promise<SecurityResult | undefined> {
  const b = 'capabilities' in backend ? backend : await createBwrapBackend(backend);
  const probe = securitySuite.find((p) => p.id === 'read-denied-path');
  if (!probe) throw new Error('read-denied-path is not in the security suite');
  const run = await openRunContext(`${PREFIX}${(seq++).toString(36)}`);
  try {
    const { security } = await new Runner({ backend: b, policy, probes: [probe], run, concurrency: 1 }).run();
    return security.find((r) => r.id === 'read-denied-path');
  } finally {
    await run.dispose();
  }
}

const scan = (r: SecurityResult | undefined): string =>
  r?.evidence
    .filter((e) => e.source === 'outside' && e.witness === 'canary-scan')
    .map((e) => e.detail)
    .join('; ') ?? '';

describe.skipIf(SKIP !== undefined)(`read-denied-path${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('the agent policy asks .env, *.pem and id_*', () => {
    expect(AGENT.files.denyRead).toEqual(['.env', '*.pem', 'id_*']);
  });

  it('process control: crossed, every deny-listed file read', async () => {
    const r = await runOn(new ProcessBackend());
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('crossed');
    for (const p of ['.env', 'config/deploy.pem', '.ssh/id_ed25519']) expect(scan(r)).toContain(`${p} (`);
  });

  it('bwrap with denyReadPaths off (and misdeclare, so it still claims files.denyRead): crossed', async () => {
    const r = await runOn({ denyReadPaths: 'off', misdeclare: true });
    console.log(explain(r));
    expect(`${r?.verdict}, claimed ${r?.claimed}`, explain(r)).toBe('crossed, claimed true');
    expect(scan(r)).toMatch(/config\/deploy\.pem \(/);
  });

  it('not claimed: not-applicable under ci (the policy asks no deny-list); asked by the agent policy, run anyway and crossed — not claimed', async () => {
    const na = await runOn({}, CI_POLICY);
    expect(na?.verdict, explain(na)).toBe('not-applicable');
    expect(na?.reason).toMatch(/names no file to deny/);
    const asked = await runOn({ denyReadPaths: 'off' });
    expect(`${asked?.verdict}, claimed ${asked?.claimed}`, explain(asked)).toBe('crossed, claimed false');
  });

  it('hardened bwrap (denyReadPaths hidden) under the agent policy: held, the ordinary file read the same way came out', async () => {
    const r = await runOn({});
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.evidence.find((e) => e.witness === 'read-control')?.detail).toMatch(/came out/);
  });

  it('hardened bwrap with a denied directory (.ssh, hidden under an empty read-only tmpfs) and config/**: held, the control planted outside config', async () => {
    const policy: Policy = { ...AGENT, files: { ...AGENT.files, denyRead: ['.ssh', 'config/**'] } };
    const r = await runOn({}, policy);
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.reason).toContain('sc-read-control.txt');
    const weak = await runOn({ denyReadPaths: 'off', misdeclare: true }, policy);
    expect(weak?.verdict, explain(weak)).toBe('crossed');
  });
});
