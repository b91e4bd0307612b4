import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export type LabTool = 'ip' | 'nsenter' | 'tcpdump';

const PACKAGE: Record<LabTool, string> = { ip: 'iproute2', nsenter: 'util-linux', tcpdump: 'tcpdump' };
// Debian keeps `ip` in /usr/sbin, which a non-login or non-root PATH often lacks.
const FALLBACK_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];

const cache = new Map<LabTool, string | undefined>();

/** Absolute path of a tool, or `undefined` when it is not installed. */
export function findTool(tool: LabTool): string | undefined {
  if (cache.has(tool)) return cache.get(tool);
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter).filter(Boolean), ...FALLBACK_DIRS];
  let found: string | undefined;
  for (const dir of dirs) {
    const candidate = join(dir, tool);
    try {
      accessSync(candidate, constants.X_OK);
      found = candidate;
      break;
    } catch {
      // Not here.
    }
  }
  cache.set(tool, found);
  return found;
}

export function packageFor(tool: LabTool): string {
  return PACKAGE[tool];
}
