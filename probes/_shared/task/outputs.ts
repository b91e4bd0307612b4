import { outside } from '../../../model/evidence.js';
import type { Observation, PredicateResult, ProbeContext } from '../../../model/probe.js';
import { artifactBytes } from './predicates.js';
import type { DeclaredOutputs, TextContract } from './outputs-schema.js';

export type { DeclaredOutputs, TextContract } from './outputs-schema.js';

/** The interpreter's bytecode cache (Python writes it when the program imports a module): not an output of the program. */
const INTERPRETER_CACHE = /(^|\/)__pycache__(\/|$)/;

/** The first violation of the text contract in `bytes`, or undefined. */
export function textContractViolation(bytes: Uint8Array, contract: TextContract): string | undefined {
  const buf = Buffer.from(bytes);
  if (contract.bom === 'reject' && buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf)
    return 'starts with a UTF-8 byte order mark, which this task does not allow';
  if (contract.trailingSpace === 'reject') {
    const lines = buf.toString('utf8').split('\n');
    for (const [i, line] of lines.entries()) {
      if (/[ \t]\r?$/.test(line)) return `line ${i + 1} ends with a space or tab, which this task does not allow`;
    }
  }
  return undefined;
}

/** Files in the workspace listing that the task did not name, or why the listing cannot vouch for that. */
export function strayOutputs(obs: Observation, outputs: DeclaredOutputs): string[] {
  const listing = obs.workspace;
  if (!listing) return [];
  const named = new Set(outputs.files);
  const strays = listing.entries.filter((e) => !named.has(e.path) && !INTERPRETER_CACHE.test(e.path)).map((e) => e.path);
  return listing.truncated ? [...strays, '(the listing stopped at its bound: more entries)'] : strays;
}

/** Checks the text contract of the declared outputs, then the task's own predicate, then that nothing else was left. */
export function withDeclaredOutputs(
  outputs: DeclaredOutputs,
  predicate: (obs: Observation, ctx?: ProbeContext) => PredicateResult,
): (obs: Observation, ctx?: ProbeContext) => PredicateResult {
  return (obs, ctx) => {
    if (outputs.text) {
      for (const path of outputs.files) {
        const bytes = artifactBytes(obs, path);
        if (typeof bytes === 'string') continue; // missing or unreadable: the task's predicate says so
        const bad = textContractViolation(bytes, outputs.text);
        if (bad) return { accepted: false, reason: `${path} ${bad}` };
      }
    }
    const result = predicate(obs, ctx);
    if (!result.accepted) return result;
    for (const path of outputs.files) {
      const bytes = artifactBytes(obs, path);
      if (typeof bytes === 'string') return { accepted: false, reason: `${bytes}: the task declares it as an output`, evidence: result.evidence ?? [] };
    }
    const strays = strayOutputs(obs, outputs);
    if (strays.length > 0) {
      const shown = strays.slice(0, 5).join(', ') + (strays.length > 5 ? ` and ${strays.length - 5} more` : '');
      return {
        accepted: false,
        reason: `the workspace holds ${strays.length === 1 ? 'a file' : 'files'} the task did not ask for (${shown}); its outputs are ${outputs.files.join(', ')}`,
        evidence: [...(result.evidence ?? []), outside('completion-predicate', `workspace after the run: ${listed(obs)}`, 'workspace')],
      };
    }
    const note = obs.workspace
      ? `no file besides the declared outputs (${outputs.files.join(', ')}) in the workspace`
      : 'the host could not list this workspace, so stray outputs were not checked';
    return { ...result, evidence: [...(result.evidence ?? []), outside('completion-predicate', note, 'workspace')] };
  };
}

const listed = (obs: Observation): string =>
  (obs.workspace?.entries ?? [])
    .slice(0, 20)
    .map((e) => e.path)
    .join(', ');
