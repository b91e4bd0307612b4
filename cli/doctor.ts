import { z } from 'zod';
import type { Backend } from '../model/backend-contract.js';
import { defaultBackend, describeBackends, loadBackend } from '../backends/registry.js';
import { probeLabSupport } from '../lab/netns/support.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { backendOptionsFrom } from './backend-options.js';
import { EXIT, SandcheckError, errorMessage } from '../core/errors.js';

export const DOCTOR_REPORT_VERSION = '1.0.0';

const Check = z.strictObject({
  name: z.string().max(1024),
  /** ok: works here; missing: something to install; config: waits for a --backend-config file of the user's. */
  status: z.enum(['ok', 'missing', 'config']),
  detail: z.string(),
  hint: z.string().optional(),
});
type DoctorCheck = z.infer<typeof Check>;

/** `sandcheck doctor --json`. */
export const DoctorReportSchema = z
  .strictObject({
    doctor: z.literal('sandcheck-doctor'),
    version: z.literal(DOCTOR_REPORT_VERSION),
    ok: z.boolean().describe('the chosen backend and the lab both work: `sandcheck run` with this backend can run every probe'),
    exitCode: z.number().int().describe('0 ok; 1 the chosen backend or the lab cannot work (docs/cli.md, "Exit codes")'),
    chosen: Check.extend({ fallbackFrom: z.strictObject({ name: z.string(), reason: z.string() }).optional() }).describe(
      'the backend `run` would use (--backend, else bwrap where it works, else process)',
    ),
    lab: Check,
    backends: z.array(Check).describe('every built-in backend'),
  })
  .meta({ id: 'sandcheck-doctor-report', title: 'sandcheck doctor --json' });
export type DoctorReport = z.infer<typeof DoctorReportSchema>;

function failed(name: string, err: unknown, install: string): DoctorCheck {
  const hint = err instanceof SandcheckError && err.hint ? err.hint : install;
  // A backend that is configured by a file of the user's is not missing: it waits for that file.
  const needsFile = err instanceof SandcheckError && /--backend-config/.test(err.message);
  return { name, status: needsFile ? 'config' : 'missing', detail: visibleLine(errorMessage(err)), hint: visibleLine(hint) };
}

async function check(name: string, description: string, install: string, load: () => Promise<Backend>): Promise<DoctorCheck> {
  let backend: Backend | undefined;
  try {
    backend = await load();
    await backend.preflight();
    return { name, status: 'ok', detail: description };
  } catch (err) {
    return failed(name, err, install);
  } finally {
    await backend?.dispose?.().catch(() => undefined);
  }
}

async function chosenBackend(opts: { backend?: string; backendConfig?: string }): Promise<DoctorReport['chosen']> {
  if (opts.backend === undefined) {
    const chosen = await defaultBackend(await backendOptionsFrom(opts));
    const name = chosen.backend.name;
    await chosen.backend.dispose?.().catch(() => undefined);
    // Falling back to the control is not ready: it isolates nothing (and `run` refuses it in CI).
    return {
      name,
      status: chosen.fallbackReason ? 'missing' : 'ok',
      detail: chosen.fallbackReason
        ? 'bwrap does not work here: `run` would fall back to the unsandboxed process control, which tests nothing (refused in CI; ask for it with --backend process)'
        : 'bwrap works here',
      ...(chosen.fallbackReason ? { hint: 'as root: npm run setup (bwrap, cgroups); or pass --backend process to test the control on purpose' } : {}),
      ...(chosen.fallbackReason ? { fallbackFrom: { name: 'bwrap', reason: visibleLine(chosen.fallbackReason) } } : {}),
    };
  }
  const name = opts.backend;
  const builtin = describeBackends().find((b) => b.name === name);
  return check(
    visibleLine(name),
    builtin?.description ?? 'an adapter of your own: loaded and preflight passed',
    builtin?.install ?? 'see docs/adapters.md',
    async () => {
      return loadBackend(name, await backendOptionsFrom({ backend: name, ...(opts.backendConfig !== undefined ? { backendConfig: opts.backendConfig } : {}) }));
    },
  );
}

export async function doctorReport(opts: { backend?: string; backendConfig?: string } = {}): Promise<DoctorReport> {
  const backends: DoctorCheck[] = [];
  for (const b of describeBackends()) backends.push(await check(b.name, b.description, b.install, () => loadBackend(b.name)));
  const chosen = await chosenBackend(opts);
  const support = await probeLabSupport();
  const lab: DoctorCheck = support.available
    ? { name: 'lab', status: 'ok', detail: 'network namespace, decoys and packet witness: network probes run' }
    : { name: 'lab', status: 'missing', detail: `${support.reason}: network probes will be not-applicable`, hint: support.hint };
  const ok = chosen.status === 'ok' && lab.status === 'ok';
  return DoctorReportSchema.parse({
    doctor: 'sandcheck-doctor',
    version: DOCTOR_REPORT_VERSION,
    ok,
    exitCode: ok ? EXIT.ok : EXIT.unexpected,
    chosen,
    lab,
    backends,
  });
}

/** The name column of `doctor` and `backends`: as wide as the longest name shown (preset:codex-sandbox-workspace), at least 16. */
export function nameColumn(names: readonly string[]): number {
  return Math.max(16, ...names.map((n) => n.length));
}

function line(c: DoctorCheck, width: number): string {
  const head = `${c.status.padEnd(8)} ${c.name.padEnd(width)} ${c.detail}`;
  return c.hint ? `${head}\n         ${c.status === 'missing' ? 'install: ' : ''}${c.hint}` : head;
}

/** `sandcheck doctor` as text: one line per backend and for the lab, then the chosen backend, names in one column. */
export function doctorText(report: DoctorReport): string {
  const width = nameColumn([...report.backends, report.lab, report.chosen].map((c) => c.name));
  const lines = [...report.backends.map((c) => line(c, width)), line(report.lab, width)];
  const fallback = report.chosen.fallbackFrom ? ` (bwrap: ${report.chosen.fallbackFrom.reason})` : '';
  lines.push(
    '',
    `chosen: ${line(report.chosen, width)}${fallback}`,
    report.ok
      ? 'ok: the chosen backend and the lab work'
      : `NOT READY: ${report.chosen.status !== 'ok' ? (report.chosen.fallbackFrom ? `the default backend ${report.chosen.fallbackFrom.name} (run would fall back to the unsandboxed ${report.chosen.name} control)` : `backend ${report.chosen.name}`) : ''}${report.chosen.status !== 'ok' && report.lab.status !== 'ok' ? ' and ' : ''}${report.lab.status !== 'ok' ? 'the lab' : ''} cannot work here (exit ${report.exitCode})`,
  );
  return `${lines.join('\n')}\n`;
}

/** One line per backend and for the lab, then the chosen backend; exit 1 when the chosen backend or the lab cannot work. */
export async function doctor(out: NodeJS.WritableStream, opts: { backend?: string; backendConfig?: string; json?: boolean } = {}): Promise<number> {
  const report = await doctorReport(opts);
  if (opts.json) {
    out.write(`${safeJsonStringify(report, 2)}\n`);
    return report.exitCode;
  }
  out.write(doctorText(report));
  return report.exitCode;
}
