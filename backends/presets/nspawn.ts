import { ADAPTER_CLAIMS, type PresetDefinition } from './model.js';

/**
 * systemd-nspawn with a private network and a volatile root (a fresh tmpfs with the host's /usr read-only), without
 * systemd as PID 1 (`--register=no --keep-unit`). The workspace is bound at its host path, inputs with --bind-ro.
 */
export const nspawn: PresetDefinition = {
  name: 'nspawn',
  summary: 'systemd-nspawn --private-network --volatile=yes over / (fresh tmpfs root, host /usr read-only), inputs --bind-ro',
  install: 'apt-get install -y systemd-container',
  requires: [
    { binary: 'systemd-nspawn', install: 'apt-get install -y systemd-container' },
    { binary: 'unshare', install: 'apt-get install -y util-linux' },
  ],
  config() {
    return Promise.resolve({
      configDir: '/',
      raw: {
        name: 'nspawn',
        description: 'systemd-nspawn --private-network --volatile=yes',
        shape: 'one-shot',
        claims: ['files.hostPaths', 'files.readOnlyInput', 'network.egress', 'identity.hostCredentials', 'lifecycle.freshEnvironment', ...ADAPTER_CLAIMS],
        notClaimedReasons: {
          'files.writeScope': 'systemd-nspawn writes where its binds allow; the write scope is not declared from them yet',
          'files.protected': 'systemd-nspawn makes no path inside the bound workspace read-only',
          'files.denyRead': 'systemd-nspawn hides no file inside the bound workspace',
          'identity.unprivileged': 'systemd-nspawn runs the program as root with a reduced capability set; --private-users is off by default',
          'resources.memoryMb': 'systemd-nspawn sets limits through systemd (--property=MemoryMax=), which is not PID 1 here',
          'resources.processes': 'systemd-nspawn sets limits through systemd (--property=TasksMax=), which is not PID 1 here',
          'resources.cpus': 'systemd-nspawn sets limits through systemd (--property=CPUQuota=), which is not PID 1 here',
          'resources.diskMb': 'the workspace is a host directory bound in: systemd-nspawn sizes only its own tmpfs root',
          'output.sanitized': "systemd-nspawn --pipe passes the program's output through unchanged",
        },
        workspace: 'host-dir',
        boxWorkspace: '{workspace}',
        version: { argv: ['/usr/bin/systemd-nspawn', '--version'] },
        exec: {
          env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
          argv: [
            // A private tmpfs for nspawn's propagation directory: where /run is not a tmpfs, nspawn refuses to remove it and says so on stderr, mixed into the program's.
            '/usr/bin/unshare',
            '--mount',
            '--propagation',
            'private',
            '--',
            '/bin/sh',
            '-c',
            'mkdir -p /run/systemd/nspawn && mount -t tmpfs -o mode=0755,size=1m sandcheck-nspawn /run/systemd/nspawn && exec "$@"',
            'sandcheck-nspawn',
            '/usr/bin/systemd-nspawn',
            '--quiet',
            '--register=no',
            '--keep-unit',
            '--pipe',
            '--private-network',
            '--volatile=yes',
            '--directory',
            '/',
            '--bind',
            '{workspace}',
            '{readOnly...}',
            '--chdir',
            '{boxCwd}',
            '--setenv=PATH=/usr/local/bin:/usr/bin:/bin',
            '--setenv=LANG=C.UTF-8',
            '{env...}',
            '--',
            // The program's parent inside: as PID 1 it could not die of its own SIGTERM (--as-pid2 reports every signal as exit 255).
            '/bin/sh',
            '-c',
            '"$@"',
            'sandcheck-box',
            '{argv...}',
          ],
          envArg: ['--setenv={name}={value}'],
          readOnlyArg: ['--bind-ro', '{hostPath}'],
          stdin: 'pipe',
        },
      },
    });
  },
};
