/**
 * The agent-sandbox contract's write probes (issue 40), each shown able to fail: crossed on the `process` control and
 * on a bwrap variant missing exactly its control, held on hardened bwrap. (docker-hardened: agent-write-scope-docker.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import createBwrapBackend, { type BwrapOptions } from '../../backends/bwrap/index.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import type { Backend } from '../../model/backend-contract.js';
import { CI_POLICY, type Policy } from '../../model/policy.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import { securitySuite } from '../../suites/security.js';
import { bwrapSkipReason } from '../helpers/bwrap.js';

const SKIP = await bwrapSkipReason();
const PREFIX = `raw${randomBytes(2).toString('hex')}`;
let seq = 0;

const explain = (r: SecurityResult | undefined): string =>
  r
    ? `${r.id}: ${r.verdict}: ${r.reason}\n  ${r.evidence.map((e) => `[${e.source} ${e.witness}${e.where ? ` @ ${e.where}` : ''}] ${e.detail.slice(0, 400)}`).join('\n  ')}`
    : 'did not run';

async function runOn(backend: Backend | BwrapOptions, id: string, policy: Policy = CI_POLICY): Promise<SecurityResult | undefined> {
  const b = 'capabilities' in backend ? backend : await createBwrapBackend(backend);
  const probe = securitySuite.find((p) => p.id === id);
  if (!probe) throw new Error(`${id} is not in the security suite`);
  const run = await openRunContext(`${PREFIX}${(seq++).toString(36)}`);
  try {
    const { security } = await new Runner({ backend: b, policy, probes: [probe], run, concurrency: 1 }).run();
    return security.find((r) => r.id === id);
  } finally {
    await run.dispose();
  }
}

const hostDiff = (r: SecurityResult | undefined): string =>
  r?.evidence
    .filter((e) => e.source === 'outside' && e.witness === 'host-file-diff')
    .map((e) => e.detail)
    .join('; ') ?? '';

describe.skipIf(SKIP !== undefined)(`write-outside-scope${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('process control: crossed, by the host decoy changed and files of this execution appearing in the shared temp', async () => {
    const r = await runOn(new ProcessBackend(), 'write-outside-scope');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('crossed');
    expect(hostDiff(r)).toMatch(/changed: \S+\/outside\/decoy\.txt: .*sha256/);
    expect(hostDiff(r)).toMatch(/appeared: \/tmp\/sc-wos-/);
  });

  it('bwrap with the host /tmp bound read-write (and nothing else changed): crossed by the shared /tmp', async () => {
    const r = await runOn({ extraBinds: [{ src: '/tmp', dest: '/tmp', readOnly: false }] }, 'write-outside-scope');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('crossed');
    expect(hostDiff(r)).toMatch(/appeared: \/tmp\/sc-wos-[0-9a-f]+-direct/);
    expect(hostDiff(r)).not.toMatch(/\/var\/tmp\//);
  });

  it('hardened bwrap: held, with the in-scope write landing and every route tried', async () => {
    const r = await runOn({}, 'write-outside-scope');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.evidence.find((e) => e.witness === 'write-control')?.detail).toMatch(/ending in the payload's answer/);
  });

  it('a policy whose write scope grants the shared /tmp: the same bound /tmp is no crossing', async () => {
    const policy: Policy = { ...CI_POLICY, files: { ...CI_POLICY.files, writeScope: ['workspace', 'temp', '/tmp'] } };
    const r = await runOn({ extraBinds: [{ src: '/tmp', dest: '/tmp', readOnly: false }] }, 'write-outside-scope', policy);
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.reason).toMatch(/places the policy's write scope grants/);
  });
});

describe.skipIf(SKIP !== undefined)(`write-protected-path${SKIP ? ` (skipped: ${SKIP})` : ''}`, () => {
  it('process control: crossed, the hook, git config, rc file, editor tasks and agent settings changed on the host', async () => {
    const r = await runOn(new ProcessBackend(), 'write-protected-path');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('crossed');
    for (const p of ['.git/hooks/pre-commit', '.git/config', '.bashrc', '.vscode/tasks.json', '.claude/settings.json']) expect(hostDiff(r)).toContain(`${p}:`);
  });

  it('bwrap with protectedPaths off (and misdeclare, so it still claims files.protected): crossed', async () => {
    const r = await runOn({ protectedPaths: 'off', misdeclare: true }, 'write-protected-path');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('crossed');
    expect(hostDiff(r)).toMatch(/\.git\/hooks\/pre-commit: .*bytes/);
  });

  it('bwrap with protectedPaths off, claiming nothing: not-applicable under ci (the policy does not ask it); asked by the agent policy, run anyway and crossed — not claimed', async () => {
    const off = await runOn({ protectedPaths: 'off' }, 'write-protected-path');
    expect(off?.verdict, explain(off)).toBe('not-applicable');
    const agent: Policy = { ...CI_POLICY, files: { ...CI_POLICY.files, protected: ['.git/hooks', '.bashrc'] } };
    const asked = await runOn({ protectedPaths: 'off' }, 'write-protected-path', agent);
    expect(`${asked?.verdict}, claimed ${asked?.claimed}`, explain(asked)).toBe('crossed, claimed false');
  });

  it('hardened bwrap (protectedPaths read-only): held, with the write to an ordinary workspace file landing on the host', async () => {
    const r = await runOn({}, 'write-protected-path');
    console.log(explain(r));
    expect(r?.verdict, explain(r)).toBe('held');
    expect(r?.evidence.find((e) => e.witness === 'write-control')?.detail).toMatch(/on the host: .* ending in the payload's answer/);
  });
});
