/** Stable codes for lab failures: callers match on these, never on message text. */
export type LabErrorCode =
  | 'LAB_UNAVAILABLE'
  | 'LAB_INVALID_RUN_ID'
  | 'LAB_EXISTS'
  | 'LAB_SETUP_FAILED'
  | 'LAB_DESTROYED'
  | 'LAB_TEARDOWN_FAILED'
  | 'WITNESS_FAILED';

export class LabError extends Error {
  readonly code: LabErrorCode;
  readonly hint: string | undefined;
  constructor(code: LabErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LabError';
    this.code = code;
    this.hint = options.hint;
  }

  format(): string {
    return `sandcheck: ${this.code}: ${this.message}${this.hint ? `\n  hint: ${this.hint}` : ''}`;
  }
}

export function isLabError(err: unknown, code?: LabErrorCode): err is LabError {
  return err instanceof LabError && (code === undefined || err.code === code);
}
