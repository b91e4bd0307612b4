import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The package root, whether running from source (tsx) or from dist/. Payloads live there. */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const parsed: unknown = JSON.parse(readFileSync(pkg, 'utf8'));
      if (typeof parsed === 'object' && parsed !== null && (parsed as { name?: unknown }).name === 'sandcheck') return (cached = dir);
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the sandcheck package root');
    dir = up;
  }
}

export function packageVersion(): string {
  const parsed = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return parsed.version ?? '0.0.0';
}

/**
 * A probe's or task case's folder: absolute (user and test probes), `tasks/<id>` or `probes/<id>` under the package
 * root, or a bare name under probes/.
 */
export function probeFolder(payload: string): string {
  if (isAbsolute(payload)) return payload;
  return payload.includes('/') ? join(packageRoot(), payload) : join(packageRoot(), 'probes', payload);
}

/** The same folder relative to the package root (for dist/: where the compiled spec of a built-in probe lives). */
export function probeFolderInPackage(payload: string): string | undefined {
  if (isAbsolute(payload)) return undefined;
  return payload.includes('/') ? payload : join('probes', payload);
}

export function payloadPath(probeDir: string, file = 'payload.py'): string {
  return join(probeFolder(probeDir), file);
}
