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

export function payloadPath(probeDir: string, file = 'payload.py'): string {
  return isAbsolute(probeDir) ? join(probeDir, file) : join(packageRoot(), 'probes', probeDir, file);
}
