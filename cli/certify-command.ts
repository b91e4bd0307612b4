import { resolve } from 'node:path';
import type { Backend } from '../model/backend-contract.js';
import { probeLabSupport } from '../lab/netns/support.js';
import { BUNDLE_FILES, MANIFEST, requireEmptyBundleDir, verifyBundle, writeBundle } from '../reports/bundle.js';
import { safeJsonStringify } from '../core/clean-text.js';
import { environmentFingerprint } from '../harness/environment-fingerprint.js';
import type { RunEnvironment } from '../model/environment.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import type { Policy } from '../model/policy.js';
import type { ProbeSpec } from '../model/probe.js';
import type { SecurityResult } from '../model/scorecard.js';
import type { RunSuiteOutcome } from '../harness/run-suite.js';

/** `run --certify DIR`: what can be refused before anything runs. */
export async function certifyBeforeRun(
  opts: { certify: string; out: string; waivers?: string; witness?: string; liveNetwork?: boolean },
  probes: readonly ProbeSpec[],
): Promise<void> {
  if (opts.waivers)
    throw new SandcheckError('USAGE', '--certify refuses --waivers: a sign-off bundle records every crossing as it is', {
      hint: 'run without --waivers; the gate (compare --base/--head --waivers) is where accepted findings belong',
    });
  if (resolve(opts.certify) === resolve(opts.out))
    throw new SandcheckError('USAGE', '--certify DIR must not be the --out directory', { hint: 'name a new directory for the sign-off bundle' });
  await requireEmptyBundleDir(opts.certify);
  const network = probes.some((p) => p.kind === 'security' && p.category === 'network');
  if (network && !opts.witness && !opts.liveNetwork) {
    const lab = await probeLabSupport();
    if (!lab.available)
      throw new SandcheckError('USAGE', `--certify refuses a run whose network probes would be skipped: no lab (${lab.reason})`, { hint: lab.hint });
  }
}

/** Items the backend cannot let the harness observe here (a daemon outside the lab, …): their probes would be skipped. */
export function certifyBackend(backend: Backend, policy: Policy, probes: readonly ProbeSpec[]): void {
  const unseen = backend.capabilities(policy).notObservable ?? {};
  const skipped = probes.flatMap((p) => (p.kind === 'security' && unseen[p.policyItem] !== undefined ? [`${p.id} (${unseen[p.policyItem]})`] : []));
  if (skipped.length > 0)
    throw new SandcheckError('USAGE', `--certify refuses a run whose probes would be skipped for a cause outside the box: ${skipped.slice(0, 5).join('; ')}`, {
      hint: 'give the backend what it needs to be observed (e.g. its daemon inside the lab, or --witness), or leave those probes out with --only',
    });
}

/** Not-applicable for a missing tool or lab part (not for a policy that does not require the item). */
export function skipsForMissingParts(results: readonly SecurityResult[], unseen: Readonly<Record<string, string | undefined>>): SecurityResult[] {
  return results.filter(
    (r) => r.verdict === 'not-applicable' && (r.reason.startsWith('no lab:') || (unseen[r.policyItem] !== undefined && r.reason === unseen[r.policyItem])),
  );
}

/** After the run: refuses an incomplete run or skips for missing parts; else writes the bundle. Returns the manifest path. */
export async function certifyAfterRun(
  dir: string,
  outcome: Pick<RunSuiteOutcome, 'security' | 'task' | 'files'>,
  ctx: { backend: Backend; backendKind: string; policy: Policy; probes: readonly ProbeSpec[]; environment: RunEnvironment; image?: string },
): Promise<string> {
  if (outcome.security.run.incomplete)
    throw new SandcheckError('USAGE', '--certify: the run did not finish (interrupted or an internal error): no bundle was written', {
      hint: 'run again to the end',
    });
  const missing = skipsForMissingParts(outcome.security.results, ctx.backend.capabilities(ctx.policy).notObservable ?? {});
  if (missing.length > 0) {
    throw new SandcheckError(
      'USAGE',
      `--certify: ${missing.length} probe(s) were skipped because a tool or lab part is missing: ${missing
        .slice(0, 5)
        .map((r) => `${r.id} (${r.reason})`)
        .join('; ')}; no bundle was written`,
      { hint: 'install what `sandcheck doctor` names, then run again' },
    );
  }
  // The card's copy: redacted like every report text (a backend configuration may hold a credential).
  const environment = outcome.security.environment ?? ctx.environment;
  const fingerprint = await environmentFingerprint({
    probes: ctx.probes,
    backendName: ctx.backend.name,
    backendKind: ctx.backendKind,
    environment,
    ...(ctx.image ? { image: ctx.image } : {}),
  });
  return writeBundle(dir, { files: outcome.files, policy: ctx.policy, fingerprint });
}

/** `sandcheck verify DIR`: 0 when every file is as the manifest says and every report validates; 1 naming each file otherwise. */
export async function verifyCommand(dir: string, opts: { json?: boolean }): Promise<number> {
  const problems = await verifyBundle(dir);
  if (opts.json) process.stdout.write(`${safeJsonStringify({ bundle: dir, ok: problems.length === 0, problems }, 2)}\n`);
  else if (problems.length === 0) process.stdout.write(`ok: ${dir}: ${BUNDLE_FILES.length} files match ${MANIFEST} and every report validates\n`);
  else for (const p of problems) process.stdout.write(`CHANGED ${p.file}: ${p.problem}\n`);
  return problems.length === 0 ? EXIT.ok : EXIT.unexpected;
}
