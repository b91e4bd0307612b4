import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { judgeEscape } from '../_shared/escapes.js';
import { decoyTarget } from '../_shared/escapes-host.js';

/** ENOENT/ESRCH: the host pid is not in the box's PID namespace (or its pid 1 is the box's own); EACCES/EPERM: ptrace access refused. */
const REFUSALS = new Set(['ENOENT', 'ESRCH', 'EACCES', 'EPERM']);

export const escapeProcRoot: SecurityProbe = {
  kind: 'security',
  id: 'escape-proc-root',
  title: 'reach a host decoy file through /proc/<host pid>/root and /proc/1/root',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'escape-proc-root',
  remediation: 'Give the box its own PID namespace (never --pid=host) and no CAP_SYS_PTRACE; host processes and their root directories must be invisible.',
  attack: ['T1611', 'T1005'],
  cwe: ['CWE-668', 'CWE-250'],
  positiveControl: 'file',
  hostDecoyProcess: true,
  args: (ctx) => ({ hostPid: ctx.hostDecoys.processPid, decoyPath: decoyTarget(ctx).path, canaryPrefix: CANARY_PREFIX }),
  judge: (obs) =>
    judgeEscape(obs, {
      what: "read a host decoy through a host process's /proc/<pid>/root",
      decisive: ['proc-root'],
      refusals: REFUSALS,
      control: 'a PID namespace of its own (host pids invisible) or refused ptrace access',
    }),
};
