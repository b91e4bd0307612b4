import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SandcheckError, errorMessage } from '../../core/errors.js';
import { loadCommandExporter } from './command-exporter.js';
import type { Exporter } from '../../model/export-types.js';

/**
 * The exporter the export probes judge: the built-in reference or naive one, or the user's own
 * (`command:<file>` or a module whose default export is an Exporter or a factory returning one).
 */
export type ExporterChoice = 'reference' | 'naive' | Exporter;

export function exporterName(choice: ExporterChoice): string {
  return typeof choice === 'string' ? choice : choice.name;
}

function isExporter(v: unknown): v is Exporter {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { name?: unknown; export?: unknown };
  return typeof o.name === 'string' && o.name.length > 0 && typeof o.export === 'function';
}

/** `--exporter` text → an exporter, checked before anything runs (CONFIG_INVALID, exit 3, otherwise). */
export async function resolveExporter(text: string): Promise<ExporterChoice> {
  if (text === 'reference' || text === 'naive') return text;
  if (text.startsWith('command:')) {
    const file = text.slice('command:'.length);
    if (file === '') throw new SandcheckError('CONFIG_INVALID', '--exporter command:<file>: the file is missing');
    return loadCommandExporter(file);
  }
  const specifier = text.startsWith('.') || isAbsolute(text) ? pathToFileURL(resolve(text)).href : text;
  let mod: { default?: unknown };
  try {
    mod = (await import(specifier)) as { default?: unknown };
  } catch (err) {
    throw new SandcheckError('CONFIG_INVALID', `--exporter ${text}: cannot load the module: ${errorMessage(err)}`, {
      hint: 'use reference, naive, command:<file.yaml>, or a module path whose default export is an exporter { name, export(candidates, limits, destDir) }',
    });
  }
  let value = mod.default;
  if (typeof value === 'function') value = await (value as () => unknown)();
  if (!isExporter(value)) {
    throw new SandcheckError(
      'CONFIG_INVALID',
      `--exporter ${text}: the default export is not an exporter { name: string, export(candidates, limits, destDir) } nor a factory of one`,
    );
  }
  return value;
}
