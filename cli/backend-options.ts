import { readConfigFile } from '../core/config-file.js';
import { SandcheckError } from '../core/errors.js';
import { visibleLine } from '../core/clean-text.js';

/**
 * The options `--backend-config FILE` gives the backend: the command backend reads its file itself (so that its
 * errors name the file and the key); any other gets the parsed document, checked by its own schema when loaded.
 */
export async function backendOptionsFrom(opts: { backend?: string; backendConfig?: string }): Promise<unknown> {
  if (opts.backendConfig === undefined) return undefined;
  if (opts.backend === 'command') return { configFile: opts.backendConfig };
  const doc = await readConfigFile(opts.backendConfig, '--backend-config');
  // An empty file is no options; it still reaches the backend, which may refuse being configured at all.
  return doc ?? {};
}

/** A backend's refusal of its options names the file they came from (the backend itself only knows the options). */
export async function namingConfigFile<T>(file: string | undefined, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (file === undefined || !(err instanceof SandcheckError) || err.code !== 'CONFIG_INVALID' || err.message.includes(file)) throw err;
    throw new SandcheckError(err.code, `--backend-config ${visibleLine(file)}: ${err.message.replaceAll('\n--backend-config: ', '\n  ')}`, {
      ...(err.hint ? { hint: err.hint } : {}),
      cause: err,
    });
  }
}
