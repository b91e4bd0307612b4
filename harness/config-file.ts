import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SandcheckError, errorMessage } from './errors.js';

/** A YAML or JSON document from disk; its shape is checked by whoever consumes it. */
export async function readConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `cannot read ${path} (${errorMessage(err)})`);
  }
  try {
    return extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${path}: not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${errorMessage(err)}`);
  }
}
