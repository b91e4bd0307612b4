import { outside, type Evidence } from './evidence.js';
import type { ExecObservation } from './observation.js';
import type { ExportOutcome } from './export-types.js';

/** The exporter's decision as one line of outside evidence. */
export function exportEvidence(out: ExportOutcome): Evidence {
  const d = out.decision;
  const detail = d.accepted
    ? `${out.exporter} exporter accepted ${d.exported.length} file(s)${d.findings.length ? `; findings: ${d.findings.map((f) => `${f.path} ${f.kind}${f.location ? ` at ${f.location}` : ''}`).join('; ')}` : ''}`
    : `${out.exporter} exporter refused: ${d.refusals
        .slice(0, 5)
        .map((r) => `${r.path}: ${r.rule} (${r.detail})`)
        .join('; ')}${
        d.findings.length
          ? `; findings: ${d.findings
              .slice(0, 5)
              .map((f) => `${f.path} ${f.kind}${f.location ? ` at ${f.location}` : ''}`)
              .join('; ')}`
          : ''
      }`;
  return outside('exporter', detail, 'export stage');
}

/** Exit status and who stopped the program, from outside facts. */
export function describeStop(exec: ExecObservation): string {
  if (exec.startError) return `could not start: ${exec.startError}`;
  if (exec.killedBy !== 'none') return `killed by ${exec.killedBy}`;
  if (exec.backendReport.oomKilled === true || (exec.resources?.oomKills ?? 0) > 0)
    return `killed by the OOM killer (memory peak ${Math.round((exec.resources?.memoryPeakBytes ?? 0) / 2 ** 20)} MiB)`;
  if (exec.backendReport.timedOut === true) return "stopped by the backend's wall clock";
  const ended = exec.signal ? `ended by ${exec.signal}` : `exit code ${exec.exitCode}`;
  // The backend's own output cap (the harness's ceiling is a killedBy): like the flags above, its report.
  if (exec.backendReport.outputTruncated === true) {
    const bytes = exec.stdout.bytes + exec.stderr.bytes;
    return exec.signal
      ? `stopped by the backend's output limit after ${bytes} bytes of stdout+stderr (${ended})`
      : `${ended} after the backend cut its output at its output limit (${bytes} bytes of stdout+stderr)`;
  }
  return ended;
}
