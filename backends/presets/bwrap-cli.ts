import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../../core/paths.js';
import type { PresetDefinition } from './model.js';

/**
 * The bwrap CLI with the native bwrap backend's flags: examples/command-bwrap.yaml (shipped in the package) is
 * the single source, so the preset and the documented example cannot drift apart.
 */
export const bwrapCli: PresetDefinition = {
  name: 'bwrap-cli',
  summary: 'the bubblewrap CLI (setpriv to uid 65529, every namespace unshared, read-only /usr, cgroup v1 limits from a wrapper): examples/command-bwrap.yaml',
  install: 'apt-get install -y bubblewrap util-linux e2fsprogs',
  requires: [
    { binary: 'bwrap', install: 'apt-get install -y bubblewrap' },
    { binary: 'setpriv', install: 'apt-get install -y util-linux' },
    { binary: 'mkfs.ext4', install: 'apt-get install -y e2fsprogs' },
  ],
  async config() {
    const dir = join(packageRoot(), 'examples');
    // yaml is loaded here, not at import: `sandcheck --version` and `list` load the preset catalogue.
    const { parse: parseYaml } = await import('yaml');
    const raw = parseYaml(await readFile(join(dir, 'command-bwrap.yaml'), 'utf8')) as Record<string, unknown>;
    return { raw: { ...raw, name: 'bwrap-cli', version: { argv: ['/usr/bin/bwrap', '--version'] } }, configDir: dir };
  },
};
