import { join } from 'node:path';
import { packageRoot } from '../../core/paths.js';

/** npm-installed sandbox tools live in a private prefix under the package (never global): .presets/<tool> (outside node_modules, which npm ci empties). */
export function presetToolPrefix(tool: string): string {
  return join(packageRoot(), '.presets', tool);
}

/** The exact command that installs an npm tool into its private prefix. */
export function npmInstallCommand(tool: string, spec: string): string {
  return `npm install --prefix ${presetToolPrefix(tool)} --no-audit --no-fund ${spec}`;
}
