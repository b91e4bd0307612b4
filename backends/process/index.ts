import type { Backend } from '../../model/backend-contract.js';
import { SandcheckError } from '../../core/errors.js';
import { withAppliedOptions } from '../shared/applied-options.js';
import { ProcessBackend } from './process-backend.js';

/** The unsandboxed control takes no options: a --backend-config with any key is refused, never dropped. */
export default async function createProcessBackend(options?: unknown): Promise<Backend> {
  const empty = options === undefined || options === null || (typeof options === 'object' && !Array.isArray(options) && Object.keys(options).length === 0);
  if (!empty) {
    throw new SandcheckError(
      'CONFIG_INVALID',
      'the process control takes no --backend-config options (it isolates nothing, so there is nothing to configure)',
      {
        hint: 'drop --backend-config, or name the backend the file is for with --backend',
      },
    );
  }
  return withAppliedOptions(new ProcessBackend(), {});
}
