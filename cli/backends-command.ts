import { z } from 'zod';
import type { Backend } from '../model/backend-contract.js';
import { describeBackends, loadBackend } from '../backends/registry.js';
import { safeJsonStringify, visibleLine } from '../core/clean-text.js';
import { SandcheckError, errorMessage } from '../core/errors.js';
import { CI_POLICY } from '../model/policy.js';
import { nameColumn } from './doctor.js';

export const BACKENDS_REPORT_VERSION = '1.0.0';

const Entry = z.strictObject({
  name: z.string().max(256).describe('what --backend takes'),
  kind: z.enum(['built-in', 'preset']),
  description: z.string(),
  /** available: preflight passed here; unavailable: something to install (see install); needs-config: waits for a --backend-config file of the user's. */
  status: z.enum(['available', 'unavailable', 'needs-config']),
  detail: z.string().optional().describe('why it is not available, as its preflight said'),
  install: z.string().optional().describe('the exact command that installs what it needs (absent when available)'),
  version: z.string().max(256).optional().describe("the tool's own answer to its version command (presets)"),
  isolation: z.enum(['none', 'sandbox']).optional(),
  claims: z.array(z.string()).describe('policy items it claims to enforce under the ci policy (the probes verify each)'),
});
export type BackendsEntry = z.infer<typeof Entry>;

/** `sandcheck backends --json`. */
export const BackendsReportSchema = z
  .strictObject({
    report: z.literal('sandcheck-backends'),
    version: z.literal(BACKENDS_REPORT_VERSION),
    policy: z.literal('ci').describe('the policy the claims are asked for'),
    backends: z.array(Entry),
  })
  .meta({ id: 'sandcheck-backends-report', title: 'sandcheck backends --json' });
export type BackendsReport = z.infer<typeof BackendsReportSchema>;

/** Structural: a backend that can tell its tool's version (the command backend and its presets). */
function versionOf(b: Backend): Promise<{ ok: true; version: string } | { ok: false; why: string }> | undefined {
  const ask = (b as Partial<{ toolVersion(): Promise<{ ok: true; version: string } | { ok: false; why: string }> | undefined }>).toolVersion;
  return typeof ask === 'function' ? ask.call(b) : undefined;
}

/** One backend's line: loaded (by `load`, the registry unless a test says otherwise), asked for its claims, preflighted. */
export async function backendEntry(
  name: string,
  description: string,
  install: string,
  load: (name: string) => Promise<Backend> = loadBackend,
): Promise<BackendsEntry> {
  const kind: BackendsEntry['kind'] = name.startsWith('preset:') ? 'preset' : 'built-in';
  let backend: Backend | undefined;
  try {
    backend = await load(name);
    const caps = backend.capabilities(CI_POLICY);
    const base: Omit<BackendsEntry, 'status'> = { name, kind, description, isolation: caps.isolation, claims: [...caps.enforces] };
    try {
      await backend.preflight();
    } catch (err) {
      const hint = err instanceof SandcheckError && err.hint ? err.hint : install;
      return { ...base, status: 'unavailable', detail: visibleLine(errorMessage(err)), install: visibleLine(hint) };
    }
    const v = await versionOf(backend);
    return { ...base, status: 'available', ...(v?.ok ? { version: visibleLine(v.version).slice(0, 256) } : {}) };
  } catch (err) {
    // Loading failed: a backend that is configured by the user's own file waits for it; anything else is missing here.
    const needsFile = err instanceof SandcheckError && /--backend-config/.test(err.message);
    if (needsFile) return { name, kind, description, status: 'needs-config', detail: visibleLine(errorMessage(err)), claims: [] };
    return { name, kind, description, status: 'unavailable', detail: visibleLine(errorMessage(err)), install: visibleLine(install), claims: [] };
  } finally {
    await backend?.dispose?.().catch(() => undefined);
  }
}

export async function backendsReport(): Promise<BackendsReport> {
  const backends: BackendsEntry[] = [];
  // One at a time: a preflight may start a tool, and the machine is shared.
  for (const b of describeBackends()) backends.push(await backendEntry(b.name, b.description, b.install));
  return BackendsReportSchema.parse({ report: 'sandcheck-backends', version: BACKENDS_REPORT_VERSION, policy: 'ci', backends });
}

function text(e: BackendsEntry, width: number): string {
  const lines = [`${e.status.padEnd(12)} ${e.version ? `${e.name.padEnd(width)}  (${e.version})` : e.name}`, `             ${e.description}`];
  if (e.claims.length > 0) lines.push(`             claims: ${e.claims.join(', ')}`);
  else if (e.isolation === 'none') lines.push('             claims: nothing (the unsandboxed control)');
  if (e.detail) lines.push(`             ${e.detail}`);
  if (e.install) lines.push(`             install: ${e.install}`);
  return lines.join('\n');
}

/**
 * `sandcheck backends`: every built-in backend and preset, what it claims under the ci policy, whether it works on
 * this machine, and the exact install command when it does not. Exit 0: a missing backend is information, not an error.
 */
export async function backendsCommand(opts: { json?: boolean }, out: NodeJS.WritableStream): Promise<number> {
  const report = await backendsReport();
  if (opts.json) {
    out.write(`${safeJsonStringify(report, 2)}\n`);
    return 0;
  }
  out.write(backendsText(report));
  return 0;
}

/** `sandcheck backends` as text: the versions in one column after the longest name. */
export function backendsText(report: BackendsReport): string {
  const width = nameColumn(report.backends.map((b) => b.name));
  const available = report.backends.filter((b) => b.status === 'available').length;
  return `${report.backends.map((b) => text(b, width)).join('\n')}\n\n${available} of ${report.backends.length} available here; claims are for the ci policy (sandcheck run verifies each)\n`;
}
