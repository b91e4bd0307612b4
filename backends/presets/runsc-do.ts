import { ADAPTER_CLAIMS, type PresetDefinition } from './model.js';

/**
 * gVisor's `runsc do` (its help: "for testing only"): the host's root filesystem under a user-space kernel, no
 * network. Its default tmpfs overlay would keep every write of the box from coming back, so the workspace could
 * never be exported: `-force-overlay=false`, which its help warns "gives the command write access to the host".
 * runsc keeps its state in the environment's own `{tmp}`, removed with it; the bundle it makes in /tmp for each run
 * (its OCI spec, with the launcher's environment) is removed by runsc on a clean exit and by sandcheck otherwise.
 */
export const runscDo: PresetDefinition = {
  name: 'runsc-do',
  summary: "gVisor `runsc --network=none do -force-overlay=false` (a user-space kernel over the host's root filesystem)",
  install: 'apt-get install -y runsc e2fsprogs',
  requires: [
    { binary: 'runsc', install: 'apt-get install -y runsc' },
    { binary: 'mkfs.ext4', install: 'apt-get install -y e2fsprogs' },
  ],
  config() {
    return Promise.resolve({
      configDir: '/',
      raw: {
        name: 'runsc-do',
        description: 'runsc --network=none do -force-overlay=false',
        shape: 'one-shot',
        claims: ['network.egress', 'identity.hostCredentials', ...ADAPTER_CLAIMS],
        notClaimedReasons: {
          'files.writeScope': "with -force-overlay=false runsc do writes to the host's filesystem (its own warning)",
          'files.protected': 'runsc do makes no path inside the workspace read-only',
          'files.denyRead': 'runsc do hides no file inside the workspace',
          'files.hostPaths': 'runsc do shows the host\'s root filesystem to the box (its help: "host filesystem mounted inside")',
          'files.readOnlyInput':
            "with -force-overlay=false the box has write access to the host (runsc do's own warning); with the overlay no file could come back",
          'identity.unprivileged': 'runsc do runs the program as root inside the sandbox',
          'lifecycle.freshEnvironment': "runsc do shares the host's /tmp (and, without the overlay, writes to it)",
          'resources.memoryMb': 'runsc do takes no memory limit',
          'resources.processes': 'runsc do takes no process limit',
          'resources.cpus': 'runsc do takes no CPU limit',
          'resources.diskMb': 'runsc do takes no disk limit',
          'output.sanitized': "runsc passes the program's output through unchanged",
        },
        workspace: 'disk-image',
        toolTemp: { dir: '/tmp', prefix: 'runsc-do', file: 'config.json' },
        boxWorkspace: '{workspace}',
        version: { argv: ['/usr/bin/runsc', '--version'] },
        exec: {
          env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
          argv: ['/usr/bin/runsc', '--network=none', '--root', '{tmp}', 'do', '-quiet', '-force-overlay=false', '-cwd', '{boxCwd}', '--', '{argv...}'],
          stdin: 'pipe',
        },
      },
    });
  },
};
