import { describe, expect, it } from 'vitest';
import type { ExportOutcome } from '../../harness/export-stage.js';
import type { RefusalRule } from '../../model/export-types.js';
import { archiveDotdot } from '../../probes/archive-dotdot/probe.js';
import { exportHardlink } from '../../probes/export-hardlink/probe.js';
import { exportTypeSmuggling } from '../../probes/export-type-smuggling/probe.js';
import { zipSlip } from '../../probes/zip-slip/probe.js';
import { CI_POLICY } from '../../model/policy.js';
import type { ProbeContext } from '../../model/probe.js';
import { makeCanaries } from '../../lab/canaries.js';
import { fakeObservation } from '../helpers/observation.js';

const ctx: ProbeContext = {
  policy: CI_POLICY,
  runId: 'rexpc',
  nonce: 'abc',
  canaries: makeCanaries(),
  decoyDir: '/nonexistent',
  hostDecoys: { processPid: 1, socketPath: '/nonexistent' },
  hostProbeDir: '/nonexistent',
};

/** The export stage of a payload that ran, with the artifact present in the box and the exporter refusing for `rules`. */
function refusedFor(exporter: string, path: string, rules: RefusalRule[]) {
  const out: ExportOutcome = {
    exporter,
    decision: { accepted: false, exported: [], refusals: rules.map((rule) => ({ path, rule, detail: 'x' })), findings: [] },
    hostChanges: [],
    exportedCanaries: [],
    destDir: '/nonexistent',
  };
  return fakeObservation({}, { finished: true, artifacts: [{ path, kind: 'file', size: 10240 }], export: out });
}

describe('export probes: held for the control against the attack, not for any refusal', () => {
  it('the reference exporter refusing for the attack itself is held; for something else only (content missing, a malformed archive) inconclusive', () => {
    expect(archiveDotdot.judge(refusedFor('reference', 'result.tar', ['archive-escape']), ctx).verdict).toBe('held');
    const other = archiveDotdot.judge(refusedFor('reference', 'result.tar', ['content-missing']), ctx);
    expect(`${other.verdict}: ${other.reason}`).toMatch(/^inconclusive: the reference exporter refused .* only for other reasons \(content-missing\)/);
    expect(zipSlip.judge(refusedFor('reference', 'result.zip', ['size-mismatch', 'archive-malformed']), ctx).verdict).toBe('inconclusive');
    expect(exportHardlink.judge(refusedFor('reference', 'result.txt', ['kind-hardlink']), ctx).verdict).toBe('held');
    expect(exportTypeSmuggling.judge(refusedFor('reference', 'report.csv', ['type-mismatch', 'finding-macro']), ctx).verdict).toBe('held');
    // A user's own exporter says only that it refused: its refusal counts as it is.
    expect(archiveDotdot.judge(refusedFor('command:./check.sh', 'result.tar', ['exporter-refused']), ctx).verdict).toBe('held');
  });
});
