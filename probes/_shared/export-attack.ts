/** The export attacks: one payload (probes/_shared/export-attack/payload.py) in eleven modes, judged on what the exporter did. */
import { join } from 'node:path';
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { exportEvidence } from '../../model/evidence-lines.js';

export const MiB = 1024 * 1024;

/** What the backend's download API handed over, as outside evidence (kinds, and whether it read through links). */
function downloadEvidence(obs: Observation): Evidence[] {
  return obs.artifacts
    .slice(0, 6)
    .map((a) =>
      outside(
        'download-api',
        `${a.path}: ${a.kind}${a.linkTarget !== undefined ? ` → ${a.linkTarget.includes('sandcheck-') ? '(host decoy path)' : a.linkTarget}` : ''}${a.nlink && a.nlink > 1 ? `, ${a.nlink} links` : ''}, ${a.content ? `${a.content.byteLength} bytes handed over` : 'no content'}${a.note ? ` (${a.note})` : ''}`,
        'getFiles',
      ),
    );
}

/**
 * The exporter's verdict: it must refuse the whole set and leave the host untouched. `expected`: the reference
 * exporter's refusal rules for what this attack is; a refusal for anything else (content the download API did not
 * hand over, an archive it re-encoded into garbage) is not that control acting. A user's own exporter says only that
 * it refused (exporter-refused): its refusal counts as it is.
 */
export function judgeExport(obs: Observation, what: string, expected?: RegExp): Judgement {
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const out = obs.export;
  const evidence = [...(out ? [exportEvidence(out)] : []), ...downloadEvidence(obs), exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (!out) return { verdict: 'inconclusive', reason: 'no export stage ran', evidence };
  // A refusal counts only for an artifact the download API shows exists in the box (its lstat).
  const present = obs.artifacts.filter((a) => a.kind !== 'missing');
  if (present.length === 0) {
    return {
      verdict: 'inconclusive',
      reason: `none of the hostile artifacts exists in the box (${obs.artifacts.map((a) => a.path).join(', ') || 'none fetched'}): the exporter was never tested`,
      evidence,
    };
  }
  if (out.hostChanges.length > 0) {
    return {
      verdict: 'crossed',
      reason: `the ${out.exporter} exporter wrote outside its directory: ${out.hostChanges.slice(0, 3).join(', ')}`,
      evidence: [outside('host-files', out.hostChanges.join('; '), 'export root'), ...evidence],
    };
  }
  if (out.exportedCanaries.length > 0) return { verdict: 'crossed', reason: `the ${out.exporter} exporter copied a host secret out of the box`, evidence };
  if (out.decision.accepted) return { verdict: 'crossed', reason: `the ${out.exporter} exporter accepted ${what}`, evidence };
  const rules = [...new Set(out.decision.refusals.map((r) => r.rule))].join(', ');
  if (expected && out.exporter === 'reference' && !out.decision.refusals.some((r) => expected.test(r.rule))) {
    return {
      verdict: 'inconclusive',
      reason: `the ${out.exporter} exporter refused ${what} only for other reasons (${rules || 'none given'}): the control against it was never shown to act`,
      evidence,
    };
  }
  return { verdict: 'held', reason: `the ${out.exporter} exporter refused ${what} (${rules}) and exported nothing`, evidence };
}

/** ATT&CK techniques and CWE weaknesses of each export attack. */
const THREATS = {
  'export-symlink-host': { attack: ['T1005', 'T1552.001'], cwe: ['CWE-59', 'CWE-61'] },
  'export-symlink-dir': { attack: ['T1005', 'T1552.001'], cwe: ['CWE-59', 'CWE-61'] },
  'export-hardlink': { attack: ['T1005', 'T1552.001'], cwe: ['CWE-62', 'CWE-59'] },
  'archive-dotdot': { attack: ['T1611'], cwe: ['CWE-22', 'CWE-23'] },
  'archive-absolute': { attack: ['T1611'], cwe: ['CWE-22', 'CWE-36'] },
  'archive-symlink-then-write': { attack: ['T1611'], cwe: ['CWE-59', 'CWE-22'] },
  'zip-slip': { attack: ['T1611'], cwe: ['CWE-22', 'CWE-23'] },
  'export-many-small': { attack: ['T1030', 'T1499'], cwe: ['CWE-770', 'CWE-400'] },
  'export-huge-file': { attack: ['T1499'], cwe: ['CWE-770', 'CWE-400'] },
  'export-type-smuggling': { attack: ['T1036.008', 'T1204.002'], cwe: ['CWE-434', 'CWE-1236'] },
  'export-special-files': { attack: ['T1499'], cwe: ['CWE-66', 'CWE-400'] },
} as const satisfies Record<string, Pick<SecurityProbe, 'attack' | 'cwe'>>;

/** The reference exporter's refusal rules (harness/export/types.ts) for what each attack is. */
const EXPECTED_RULES: Record<keyof typeof THREATS, RegExp> = {
  'export-symlink-host': /^kind-symlink$/,
  'export-symlink-dir': /^kind-symlink$/,
  'export-hardlink': /^kind-hardlink$/,
  'archive-dotdot': /^archive-escape$/,
  'archive-absolute': /^archive-absolute$/,
  'archive-symlink-then-write': /^archive-symlink$/,
  'zip-slip': /^archive-escape$/,
  'export-many-small': /^total-too-large$/,
  'export-huge-file': /^file-too-large$/,
  'export-type-smuggling': /^(type-mismatch|type-not-allowed|finding-)/,
  'export-special-files': /^kind-(fifo|device|socket)$/,
};

export const exportProbe = (
  id: keyof typeof THREATS,
  title: string,
  mode: string,
  artifacts: readonly string[] | ((ctx: ProbeContext) => readonly string[]),
  what: string,
  extraArgs: (ctx: ProbeContext) => Record<string, unknown> = () => ({}),
): SecurityProbe => ({
  kind: 'security',
  id,
  title,
  category: 'files',
  policyItem: 'exports.limits',
  enforcedBy: 'exporter',
  severity: 'high',
  payload: 'probes/_shared/export-attack',
  remediation:
    'Export through a checker that takes regular files only, normalised paths inside the export root, count/size/aggregate limits and content types by magic bytes, and that exports nothing when anything is off.',
  ...THREATS[id],
  artifacts,
  args: (ctx) => ({ mode, ...extraArgs(ctx) }),
  judge: (obs) => judgeExport(obs, what, EXPECTED_RULES[id]),
});

export const decoy = (ctx: ProbeContext) => ({ decoyFile: join(ctx.decoyDir, '.aws', 'credentials'), decoyDir: ctx.decoyDir });
