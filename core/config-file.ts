import { extname } from 'node:path';
import { CONFIG_FILE_MAX_BYTES, readBoundedText } from './bounded-file.js';
import { SandcheckError } from './errors.js';
import { visibleLine } from './clean-text.js';

interface YamlErrorShape {
  code?: unknown;
  linePos?: unknown;
}

function yamlPosition(err: unknown): string {
  const e = (typeof err === 'object' && err !== null ? err : {}) as YamlErrorShape;
  const pos = Array.isArray(e.linePos) ? (e.linePos[0] as { line?: unknown; col?: unknown } | undefined) : undefined;
  const where = typeof pos?.line === 'number' && typeof pos.col === 'number' ? ` at line ${pos.line}, column ${pos.col}` : '';
  // The parser's own message quotes the offending lines: only its error code goes out.
  const what = typeof e.code === 'string' && /^[A-Z_]{1,40}$/.test(e.code) ? ` (${e.code.toLowerCase().replaceAll('_', ' ')})` : '';
  return `${where}${what}`;
}

/**
 * Parses a YAML or JSON document (JSON by a `.json` name). A syntax error names the file and the place,
 * never the text: the file may not be what its name says (a symlink to a secret), and error messages
 * reach terminals and CI logs.
 */
export async function parseDocument(text: string, path: string): Promise<unknown> {
  const json = extname(path) === '.json';
  try {
    return json ? JSON.parse(text) : (await import('yaml')).parse(text);
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `${visibleLine(path)}: not valid ${json ? 'JSON' : `YAML${yamlPosition(err)}`}`, {
      hint: json ? 'check it with a JSON validator (e.g. `python3 -m json.tool FILE`)' : 'check the indentation and quoting at that place',
    });
  }
}

/** A YAML or JSON document from disk; its shape is checked by whoever consumes it. */
export async function readConfigFile(path: string, what = ''): Promise<unknown> {
  // Bounded, refused before reading when it is not a regular file (/dev/zero, a FIFO), and refused when binary.
  const read = await readBoundedText(path, CONFIG_FILE_MAX_BYTES);
  const name = `${what ? `${what} ` : ''}${visibleLine(path)}`;
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `cannot read ${name}: it ${read.message}`, { hint: 'give a regular YAML or JSON file' });
  return parseDocument(read.text, path);
}
