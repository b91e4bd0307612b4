import { SandcheckError, type SandcheckErrorCode } from '../../core/errors.js';

/** Stable codes for lab failures: callers match on these, never on message text. */
export type LabErrorCode = Extract<SandcheckErrorCode, `LAB_${string}` | 'WITNESS_FAILED'>;

export class LabError extends SandcheckError {
  declare readonly code: LabErrorCode;
  constructor(code: LabErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'LabError';
  }
}

export function isLabError(err: unknown, code?: LabErrorCode): err is LabError {
  return err instanceof LabError && (code === undefined || err.code === code);
}
