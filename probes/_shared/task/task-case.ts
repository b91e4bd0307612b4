import type { TaskCase } from '../../../model/probe.js';
import type { HiddenInputs } from './hidden-inputs.js';
import type { DeclaredOutputs } from './outputs.js';
import type { PredicateSpec } from './predicates.js';

/**
 * Task-case fields the loop reads beyond model/probe.ts's TaskCase (kept here until the model
 * carries them): how the program must end, and metamorphic inputs.
 */
export interface TaskCaseExtras {
  /** The exit status a correct program ends with; 0 unless the case is about a deliberate failure. */
  expectedExit?: number;
  hiddenInputs?: HiddenInputs<unknown>;
  /** The files the program must leave and nothing else, and how they are written (outputs.ts); checked by the case's predicate. */
  outputs?: DeclaredOutputs;
}

export type TaskCaseSpec = TaskCase & TaskCaseExtras;

export function extrasOf(task: TaskCase): TaskCaseExtras {
  const t = task as TaskCaseSpec;
  return {
    ...(typeof t.expectedExit === 'number' ? { expectedExit: t.expectedExit } : {}),
    ...(t.hiddenInputs ? { hiddenInputs: t.hiddenInputs } : {}),
    ...(t.outputs ? { outputs: t.outputs } : {}),
  };
}

/** A declarative predicate that checks an exit code (at the top or in a top-level `all`) also says how the program must end. */
export function expectedExitFromSpec(spec: PredicateSpec): number | undefined {
  if (spec.type === 'exit-code') return spec.code;
  if (spec.type === 'all') {
    for (const part of spec.of) {
      const code = expectedExitFromSpec(part);
      if (code !== undefined) return code;
    }
  }
  return undefined;
}
