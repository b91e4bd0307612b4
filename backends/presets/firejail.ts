import { ADAPTER_CLAIMS, type PresetDefinition } from './model.js';

/**
 * firejail with its default profile (/etc/firejail/default.profile, the one every regular user gets), started by
 * the user sandcheck runs as. firejail has no option for the working directory: `env -C` starts it in the box's.
 * Claims: what default.profile documents (caps.drop all, nonewprivs, noroot, seccomp, the blacklists of
 * disable-common.inc, its own PID namespace) and the `--read-only` of each input.
 */
export const firejail: PresetDefinition = {
  name: 'firejail',
  summary: 'firejail with its default profile (caps.drop all, nonewprivs, noroot, seccomp, blacklists), inputs --read-only',
  install: 'apt-get install -y firejail',
  requires: [{ binary: 'firejail', install: 'apt-get install -y firejail' }],
  config() {
    return Promise.resolve({
      configDir: '/',
      raw: {
        name: 'firejail',
        description: 'firejail --profile=default',
        shape: 'one-shot',
        claims: ['files.hostPaths', 'files.readOnlyInput', 'identity.unprivileged', 'identity.hostCredentials', ...ADAPTER_CLAIMS],
        notClaimedReasons: {
          'files.writeScope': "firejail's default profile keeps the host's /tmp and home writable",
          'files.protected': "firejail's default profile makes no path inside the workspace read-only",
          'files.denyRead': "firejail's default profile blacklists no file inside the workspace (its blacklists name paths in home and /etc)",
          'network.egress': 'firejail\'s default profile shares the caller\'s network ("net none" is commented out in default.profile)',
          'lifecycle.freshEnvironment': 'firejail\'s default profile keeps the host\'s /tmp and home ("private" and "private-tmp" are commented out)',
          'resources.memoryMb': "firejail's default profile sets no rlimit-as, and firejail removed --cgroup",
          'resources.processes': "firejail's default profile sets no rlimit-nproc, and firejail removed --cgroup",
          'resources.cpus': 'firejail has no CPU quota (--cgroup was removed)',
          'resources.diskMb': "firejail's default profile sets no rlimit-fsize or sized tmpfs: the workspace is a host directory",
          'output.sanitized': "firejail passes the program's output through unchanged",
        },
        workspace: 'host-dir',
        boxWorkspace: '{workspace}',
        version: { argv: ['/usr/bin/firejail', '--version'] },
        exec: {
          env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
          argv: ['/usr/bin/env', '-C', '{boxCwd}', '/usr/bin/firejail', '--quiet', '--profile=default', '{readOnly...}', '--', '{argv...}'],
          readOnlyArg: ['--read-only={hostPath}'],
          stdin: 'pipe',
        },
      },
    });
  },
};
