import { posix } from 'node:path';

/** Paths as the box sees them. */
export const BOX_WORK = '/work';
export const BOX_PATH = '/usr/bin:/bin';
/** The fd bwrap writes its JSON status documents to (and the launcher its own failure). */
export const STATUS_FD = 3;
/** The fd the launcher opens the seccomp filter file on, for bwrap --seccomp. */
export const SECCOMP_FD = 4;
/** Exit status of the launcher shell when it could not put itself into the environment's cgroups. */
export const LAUNCH_CGROUP_FAILED = 125;

export interface Tools {
  sh: string;
  bwrap: string | undefined;
  setpriv: string | undefined;
  nsenter: string | undefined;
  /** mkfs.ext4, for a disk-image workspace. */
  mkfs?: string | undefined;
}

export interface BoxPlan {
  tools: Tools;
  /** Drop to this host uid/gid with setpriv before bwrap starts; undefined = keep the harness's uid. */
  uid: number | undefined;
  unsharePid: boolean;
  /** false = the box stays in the host user namespace (only as root: a deliberate weakening). Default true. */
  unshareUser?: boolean;
  shareNetwork: boolean;
  /** Run everything under `nsenter --net=<path>` (the lab). */
  netnsPath: string | undefined;
  /** Host file bound at /etc/resolv.conf (only when the network is shared). */
  resolvConf: string | undefined;
  /** Host directory bound at /work. */
  workHost: string;
  /** Host directory bound at /tmp; undefined = a bwrap tmpfs of `tmpSizeBytes`. */
  tmpHost: string | undefined;
  tmpSizeBytes: number;
  /** Workspace-relative files bound read-only over themselves. */
  readOnlyFiles: readonly string[];
  /** The protected-paths option: workspace-relative binds over themselves, in order (backends/bwrap/protected-paths.ts). */
  protectedBinds?: readonly { rel: string; readOnly: boolean }[];
  /** The denyReadPaths option: workspace-relative paths hidden after every other workspace bind (backends/bwrap/deny-read.ts). */
  hiddenPaths?: readonly { rel: string; dir: boolean }[];
  extraBinds: readonly { src: string; dest: string; readOnly: boolean }[];
  /** Workspace-relative working directory ('' = /work). */
  cwd: string;
  /** Variables on top of the clean base (PATH, HOME, LANG), in order. */
  env: readonly (readonly [string, string])[];
  argv: readonly string[];
  /** fd for bwrap's JSON status documents; undefined = none (the preflight trial). */
  statusFd: number | undefined;
  /** The box's seccomp filter is on SECCOMP_FD (the launcher opened it). */
  seccomp?: boolean;
}

/** The bwrap part: every option of the hardened profile, then `--` and the program. */
export function bwrapArgs(plan: BoxPlan): string[] {
  const a: string[] = [];
  const unshareUser = plan.unshareUser ?? true;
  if (plan.unsharePid && unshareUser) {
    a.push('--unshare-all');
    if (plan.shareNetwork) a.push('--share-net');
  } else {
    // Everything --unshare-all does but what was left out (--unshare-all would also try a user namespace).
    a.push('--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
    if (plan.unsharePid) a.push('--unshare-pid');
    if (!plan.shareNetwork) a.push('--unshare-net');
  }
  // An explicit --unshare-user (--unshare-all only tries) so that nested user namespaces can be disabled.
  if (unshareUser) a.push('--unshare-user', '--disable-userns');
  a.push('--die-with-parent', '--new-session', '--hostname', 'sandcheck');
  if (plan.uid !== undefined) a.push('--cap-drop', 'ALL');
  a.push(
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
  );
  if (plan.tmpHost !== undefined) a.push('--bind', plan.tmpHost, '/tmp');
  else a.push('--size', String(plan.tmpSizeBytes), '--tmpfs', '/tmp');
  a.push('--bind', plan.workHost, BOX_WORK);
  for (const rel of plan.readOnlyFiles) a.push('--ro-bind', posix.join(plan.workHost, rel), posix.join(BOX_WORK, rel));
  for (const b of plan.protectedBinds ?? []) a.push(b.readOnly ? '--ro-bind' : '--bind', posix.join(plan.workHost, b.rel), posix.join(BOX_WORK, b.rel));
  for (const h of plan.hiddenPaths ?? []) {
    const dest = posix.join(BOX_WORK, h.rel);
    if (h.dir) a.push('--tmpfs', dest, '--remount-ro', dest);
    else a.push('--ro-bind', '/dev/null', dest);
  }
  if (plan.shareNetwork && plan.resolvConf !== undefined) a.push('--ro-bind', plan.resolvConf, '/etc/resolv.conf');
  for (const b of plan.extraBinds) a.push(b.readOnly ? '--ro-bind' : '--bind', b.src, b.dest);
  a.push('--chdir', plan.cwd === '' ? BOX_WORK : posix.join(BOX_WORK, plan.cwd));
  a.push('--clearenv', '--setenv', 'PATH', BOX_PATH, '--setenv', 'HOME', BOX_WORK, '--setenv', 'LANG', 'C.UTF-8');
  for (const [k, v] of plan.env) a.push('--setenv', k, v);
  if (plan.statusFd !== undefined) a.push('--json-status-fd', String(plan.statusFd));
  if (plan.seccomp) a.push('--seccomp', String(SECCOMP_FD));
  a.push('--', ...plan.argv);
  return a;
}

/** nsenter (root, joins the lab) → setpriv (drops to the box uid, no caps, no_new_privs) → bwrap. */
export function commandArgv(plan: BoxPlan): string[] {
  const cmd: string[] = [];
  if (plan.netnsPath !== undefined) {
    if (!plan.tools.nsenter) throw new Error('nsenter is required to enter the lab');
    cmd.push(plan.tools.nsenter, `--net=${plan.netnsPath}`, '--');
  }
  if (plan.uid !== undefined) {
    if (!plan.tools.setpriv) throw new Error('setpriv is required to drop privileges');
    cmd.push(
      plan.tools.setpriv,
      `--reuid=${plan.uid}`,
      `--regid=${plan.uid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      // bwrap dies with the harness, even a SIGKILLed one (kept across exec: bwrap is not setuid).
      '--pdeathsig=KILL',
      '--',
    );
  } else if (plan.tools.setpriv) {
    cmd.push(plan.tools.setpriv, '--pdeathsig=KILL', '--');
  }
  if (!plan.tools.bwrap) throw new Error('bwrap is required');
  cmd.push(plan.tools.bwrap, ...bwrapArgs(plan));
  return cmd;
}

/**
 * The launcher: a shell that writes its own pid into each cgroup.procs file and then execs the command,
 * so the launcher *is* bwrap and the whole tree is inside the cgroups before anything of the box runs.
 * A failure is reported out of band on the status fd, never on the box's stderr.
 */
export const LAUNCH_SCRIPT = [
  // The seccomp filter file (or ''), opened for bwrap; a file that cannot be opened ends the launcher.
  's=$1; shift',
  `if [ -n "$s" ]; then exec ${SECCOMP_FD}<"$s"; fi`,
  'n=$1; shift',
  'while [ "$n" -gt 0 ]; do',
  `  if ! { echo $$ > "$1"; } 2>/dev/null; then echo '{ "sandcheck-launch-error": "cannot join the environment cgroup" }' >&${STATUS_FD}; exit ${LAUNCH_CGROUP_FAILED}; fi`,
  '  shift; n=$((n - 1))',
  'done',
  'exec "$@"',
].join('\n');

export function launcherArgs(procsFiles: readonly string[], command: readonly string[], seccompFile = ''): string[] {
  return ['-c', LAUNCH_SCRIPT, 'sandcheck-launch', seccompFile, String(procsFiles.length), ...procsFiles, ...command];
}
