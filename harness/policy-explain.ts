import type { Policy } from '../model/policy.js';

export interface PolicyBounds {
  attempts: number;
  turnSeconds: number;
  queueStartupSeconds: number;
  /** T_worst ≤ (1 + N) × T_turn + T_queue_and_startup */
  worstCaseSeconds: number;
  exportFilesTimesSizeMb: number;
  exportCapMb: number;
  exportWorstCaseMb: number;
  outputCapBytes: number;
}

/** The bounds a policy implies (the essay's budget arithmetic). */
export function policyBounds(p: Policy): PolicyBounds {
  const attempts = 1 + p.attempts.corrections;
  const filesTimesSize = p.exports.maxFiles * p.exports.maxFileMb;
  return {
    attempts,
    turnSeconds: p.resources.wallSeconds,
    queueStartupSeconds: p.attempts.queueStartupSeconds,
    worstCaseSeconds: attempts * p.resources.wallSeconds + p.attempts.queueStartupSeconds,
    exportFilesTimesSizeMb: filesTimesSize,
    exportCapMb: p.exports.maxTotalMb,
    exportWorstCaseMb: Math.min(filesTimesSize, p.exports.maxTotalMb),
    outputCapBytes: p.output.maxBytes,
  };
}

const n = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(2));

export function explainPolicy(p: Policy): string {
  const b = policyBounds(p);
  return [
    `policy ${p.name}`,
    `  end-to-end wait, worst case: (1 + ${p.attempts.corrections}) × ${n(b.turnSeconds)} s + ${n(b.queueStartupSeconds)} s = ${n(b.worstCaseSeconds)} s`,
    `    (${b.attempts} attempts of at most ${n(b.turnSeconds)} s each, plus queue and startup; not the per-turn ${n(b.turnSeconds)} s)`,
    `  export volume, worst case: ${p.exports.maxFiles} files × ${n(p.exports.maxFileMb)} MB = ${n(b.exportFilesTimesSizeMb)} MB, capped at ${n(b.exportCapMb)} MB aggregate → ${n(b.exportWorstCaseMb)} MB`,
    `  output to the controller: ${b.outputCapBytes} bytes of stdout+stderr per execution, ${b.outputCapBytes * b.attempts} bytes over all attempts`,
    `  per execution: ${n(p.resources.cpus)} CPU, ${p.resources.memoryMb} MB memory, ${p.resources.processes} processes, ${p.resources.diskMb} MB temp disk, network ${p.network.mode}${p.network.mode === 'allowlist' ? ` (${p.network.allow.join(', ') || 'nothing'})` : ''}`,
    `  writes: ${p.files.writeScope ? `only inside ${p.files.writeScope.join(', ')} (files.writeScope)` : 'no write scope asked (files.writeScope unset)'}`,
    `  protected inside the workspace: ${p.files.protected && p.files.protected.length > 0 ? `${p.files.protected.join(', ')} (files.protected)` : 'nothing asked (files.protected unset)'}`,
    `  unreadable inside the workspace: ${p.files.denyRead && p.files.denyRead.length > 0 ? `${p.files.denyRead.join(', ')} (files.denyRead)` : 'nothing asked (files.denyRead unset)'}`,
  ].join('\n');
}
