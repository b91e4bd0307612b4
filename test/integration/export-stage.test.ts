import { describe, expect, it } from 'vitest';
import type { Backend } from '../../model/backend-contract.js';
import createBwrapBackend from '../../backends/bwrap/index.js';
import { ProcessBackend } from '../../backends/process/process-backend.js';
import { CI_POLICY } from '../../model/policy.js';
import { openRunContext } from '../../harness/run-context.js';
import { Runner } from '../../harness/runner.js';
import type { ExporterChoice } from '../../harness/export-stage.js';
import { downloadApiLinks } from '../../probes/download-api-links/probe.js';
import { exportProbes } from '../../suites/export.js';

const isRoot = process.getuid?.() === 0;

async function run(backend: Backend, exporter: ExporterChoice, runId: string) {
  const ctx = await openRunContext(runId);
  try {
    return await new Runner({ backend, policy: CI_POLICY, probes: [downloadApiLinks, ...exportProbes], run: ctx, concurrency: 3, exporter }).run();
  } finally {
    await ctx.dispose();
  }
}

const verdicts = (rs: { id: string; verdict: string; reason: string }[]) => rs.map((r) => `${r.id}: ${r.verdict}: ${r.reason.slice(0, 160)}`);

describe.skipIf(!isRoot)('the export stage under attack (process and bwrap)', () => {
  for (const [name, make] of [
    ['process', async () => new ProcessBackend()],
    ['bwrap', async () => createBwrapBackend()],
  ] as const) {
    it(`${name}: the reference exporter holds every export probe; the naive one crosses on each`, async () => {
      const reference = await run(await make(), 'reference', `rexp${name[0]}1`);
      const exp = reference.security.filter((r) => r.id !== 'download-api-links');
      expect(verdicts(exp.filter((r) => r.verdict !== 'held'))).toEqual([]);
      const smuggling = exp.find((r) => r.id === 'export-type-smuggling');
      const exporterLine = smuggling?.evidence.find((e) => e.witness === 'exporter')?.detail ?? '';
      // Findings name the cell and the archive entry that triggered them.
      expect(exporterLine).toMatch(/data\.csv formula-injection at .*B2/);
      expect(exporterLine).toMatch(/book\.xlsx macro at .*xl\/vbaProject\.bin/);
      const naive = await run(await make(), 'naive', `rexp${name[0]}2`);
      const nexp = naive.security.filter((r) => r.id !== 'download-api-links');
      expect(verdicts(nexp.filter((r) => r.verdict !== 'crossed'))).toEqual([]);
      for (const r of nexp)
        expect(
          r.evidence.some((e) => e.source === 'outside' && (e.witness === 'exporter' || e.witness === 'host-files')),
          r.id,
        ).toBe(true);
    });
  }

  it("judges the backend's download API on its own: the process control reads through links, bwrap does not", async () => {
    const [proc, bwrap] = await Promise.all([run(new ProcessBackend(), 'reference', 'rexpd1'), run(await createBwrapBackend(), 'reference', 'rexpd2')]);
    expect(proc.security.find((r) => r.id === 'download-api-links')?.verdict).toBe('crossed');
    expect(bwrap.security.find((r) => r.id === 'download-api-links')?.verdict).toBe('held');
  });
});
