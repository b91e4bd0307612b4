import { checkAdapter } from '../adapter/check/run-checks.js';
import { checkLine, checkReportText, writeCheckReports } from '../adapter/check/report.js';
import type { AdapterCheckReport } from '../adapter/check/model.js';
import { isBuiltinBackend, loadBackend } from '../backends/registry.js';
import type { Backend } from '../model/backend-contract.js';
import { backendOptionsFrom } from './backend-options.js';
import { EXIT, SandcheckError } from '../core/errors.js';
import type { Policy } from '../model/policy.js';
import { loadPolicy } from '../harness/policy-loader.js';

export interface AdapterCheckCommandOptions {
  backend: string;
  backendConfig?: string;
  policy: string;
  out?: string;
  json?: boolean;
}

/** `sandcheck adapter check`: exit 0 when every blocking check passed, 1 when one failed, 3 when nothing could run. */
export async function adapterCheckCommand(opts: AdapterCheckCommandOptions): Promise<number> {
  const policy = await loadPolicy(opts.policy);
  const options = await backendOptionsFrom(opts);
  const backend = await loadBackend(opts.backend, options);
  let report: AdapterCheckReport;
  try {
    report = await checkAdapter(backend, {
      policy,
      source: isBuiltinBackend(opts.backend) ? `built-in ${opts.backend}` : opts.backend,
      // Live progress on a terminal only: the full report follows on stdout.
      ...(opts.json || !process.stderr.isTTY ? {} : { onCheck: (r) => process.stderr.write(`${checkLine(r)}\n`) }),
    });
  } finally {
    await backend.dispose?.();
  }
  const files = opts.out ? await writeCheckReports(opts.out, report) : undefined;
  if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    process.stdout.write(`${checkReportText(report)}\n`);
    if (files) process.stdout.write(`reports: ${files.json}, ${files.junit}\n`);
  }
  return report.summary.blockingFailed.length === 0 ? EXIT.ok : EXIT.unexpected;
}

/**
 * Before `sandcheck run` trusts an external adapter's verdicts (a module, an rpc process, a command
 * backend file), its blocking checks must pass; built-in backends are checked by sandcheck's own tests.
 */
export async function requireTrustedAdapter(
  spec: string,
  backend: Backend,
  policy: Policy,
  notice: (text: string) => void,
): Promise<AdapterCheckReport | undefined> {
  // The command backend is built in, but what it runs is the user's file: checked like any external adapter.
  if (isBuiltinBackend(spec) && spec !== 'command') return undefined;
  notice(`checking the external adapter ${spec} before trusting its verdicts (sandcheck adapter check; --skip-adapter-check skips it)…`);
  const report = await checkAdapter(backend, { policy, source: spec, blockingOnly: true });
  const failed = report.checks.filter((c) => c.blocking && c.status === 'fail');
  if (failed.length > 0) {
    throw new SandcheckError(
      'ADAPTER_CHECK_FAILED',
      `the adapter ${spec} fails ${failed.length} blocking check(s) (check run ${report.runId}), so its verdicts cannot be trusted:\n${failed.map((c) => `  ${c.id}: ${c.detail}`).join('\n')}`,
      {
        hint: `run \`sandcheck adapter check --backend ${spec}\` for the full report; --skip-adapter-check runs anyway (verdicts then rest on an unchecked adapter)`,
      },
    );
  }
  const partly = report.checks.filter((c) => c.status === 'pass' && c.notApplicable !== undefined).map((c) => `${c.id} (${c.notApplicable ?? ''})`);
  const repeated = report.checks
    .filter((c) => c.status === 'pass' && c.firstAttempt !== undefined)
    .map((c) => `${c.id} (first attempt: ${c.firstAttempt ?? ''})`);
  notice(
    `adapter ${spec}: ${report.summary.passed} blocking check(s) passed, ${report.summary.skipped} not observable here${partly.length ? `; passed only in part, the rest not applicable: ${partly.join('; ')}` : ''}${repeated.length ? `; passed only when repeated: ${repeated.join('; ')}` : ''}`,
  );
  return report;
}
