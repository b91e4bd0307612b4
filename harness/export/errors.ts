import { SandcheckError } from '../../core/errors.js';

/** Stable codes for harness-side export failures (the box's own misdeeds are refusals, not errors). */
export type ExportErrorCode =
  'EXPORT_INPUT_INVALID' | 'EXPORT_DEST_INVALID' | 'EXPORT_DEST_UNSAFE' | 'EXPORT_DEST_EXISTS' | 'EXPORT_WRITE_FAILED' | 'EXPORT_NAIVE_CONFINEMENT';

/** A SandcheckError of class HARNESS, so the runner reports it as `error`, apart from the box's failures. */
export class ExportError extends SandcheckError {
  readonly exportCode: ExportErrorCode;
  readonly path: string | undefined;
  constructor(exportCode: ExportErrorCode, message: string, options: { path?: string; cause?: unknown; hint?: string } = {}) {
    super('HARNESS', `${exportCode}: ${message}`, {
      ...(options.hint === undefined ? {} : { hint: options.hint }),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.name = 'ExportError';
    this.exportCode = exportCode;
    this.path = options.path;
  }
}

export function isExportError(err: unknown, code?: ExportErrorCode): err is ExportError {
  return err instanceof ExportError && (code === undefined || err.exportCode === code);
}
