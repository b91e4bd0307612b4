import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LAB_RESOLVER } from './addresses.js';

/** The part of a lab that entering it needs. */
export interface NetnsRef {
  readonly name: string;
  /** `/run/netns/<name>` */
  readonly path: string;
}

/**
 * argv that runs `argv` inside the namespace. `nsenter --net` joins only the network namespace, unlike
 * `ip netns exec`, which also remounts /sys and so hides the cgroup mounts the resource witnesses read.
 */
export function nsenterArgv(ns: NetnsRef, argv: readonly string[]): string[] {
  if (argv.length === 0) throw new TypeError('Expected a non-empty argv to run inside the lab');
  return ['nsenter', `--net=${ns.path}`, '--', ...argv];
}

/** Writes a resolv.conf naming the lab resolver into the lab's scratch dir, for a backend to bind-mount. */
export async function resolvConfFor(ns: NetnsRef & { readonly scratchDir: string }): Promise<string> {
  const file = join(ns.scratchDir, 'resolv.conf');
  await writeFile(file, `# sandcheck lab ${ns.name}\nnameserver ${LAB_RESOLVER}\noptions timeout:1 attempts:1\n`, {
    mode: 0o644,
  });
  return file;
}
