import { extname } from 'node:path';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from './bounded-file.js';
import { SandcheckError, errorMessage } from './errors.js';

/** A YAML or JSON document from disk; its shape is checked by whoever consumes it. */
export async function readConfigFile(path: string): Promise<unknown> {
  // Bounded, and refused before reading when it is not a regular file (/dev/zero, a FIFO).
  const read = await readBoundedText(path, CONFIG_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `cannot read ${path}: ${read.reason === 'not-regular' || read.reason === 'too-large' ? `it ${read.message}` : read.message}`);
  const text = read.text;
  try {
    return extname(path) === '.json' ? JSON.parse(text) : (await import('yaml')).parse(text);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${path}: not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${errorMessage(err)}`);
  }
}
