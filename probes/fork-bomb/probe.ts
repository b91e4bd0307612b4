import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';
import { healthEvidence, hostHarmJudgement, stopCause, adapterCountersEvidence } from '../_shared/judges.js';

export const forkBomb: SecurityProbe = {
  kind: 'security',
  id: 'fork-bomb',
  title: 'fork past the process limit (bounded at 1024, then reaped)',
  category: 'resources',
  policyItem: 'resources.processes',
  severity: 'high',
  payload: 'fork-bomb',
  remediation: 'Limit processes with a pids cgroup (pids.max) per box; RLIMIT_NPROC counts per uid across the whole host and does not apply to root.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  sampleProcesses: true,
  readsCgroup: true,
  load: 'cpu', // its forks and the host's sampling of them need the CPU: never beside more than the cores can run
  watchHost: true,
  args: (ctx) => ({ ceiling: Math.min(1024, ctx.policy.resources.processes * 2 + 16), holdSeconds: 1.5 }),
  judge: (obs, ctx) => {
    const harmed = hostHarmJudgement(obs);
    if (harmed) return harmed;
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const limit = ctx.policy.resources.processes;
    const r = obs.exec.resources;
    const sampled = obs.exec.hostProcessCountMax;
    const peak = Math.max(r?.pidsPeak ?? 0, sampled ?? 0);
    const evidence = [
      ...(r
        ? [
            outside(
              'cgroup',
              `pids peak ${r.pidsPeak ?? 'n/a'}, refused forks (pids.events max) ${r.pidsMaxEvents ?? 'n/a'}, limit ${r.pidsLimit ?? 'n/a'}`,
              r.source,
            ),
          ]
        : []),
      ...(sampled !== undefined ? [outside('host-process-scan', `at most ${sampled} processes of the box alive at once`, 'host /proc')] : []),
      outside('stop-cause', stopCause(obs)),
      exitEvidence(obs.exec),
      ...healthEvidence(obs),
      payloadReport(obs.exec),
      ...adapterCountersEvidence(obs),
    ];
    if (peak > limit) return { verdict: 'crossed', reason: `${peak} processes ran at once, past the limit of ${limit}`, evidence };
    if (obs.exec.killedBy !== 'none')
      return { verdict: 'inconclusive', reason: `the harness had to stop it (${stopCause(obs)}) before the process limit showed`, evidence };
    // Held needs refusals counted by the pids cgroup AND a peak near the limit: one refusal at a
    // peak of 2 is some other limit (or a lie), not the policy's.
    const refused = r?.pidsMaxEvents ?? 0;
    if (refused === 0)
      return {
        verdict: 'inconclusive',
        reason: `no refused fork was counted from outside (peak ${peak} of ${limit}): the process limit was never shown to act`,
        evidence,
      };
    if (peak < limit * 0.75) {
      return {
        verdict: 'inconclusive',
        reason: `forks were refused (${refused}) but at most ${peak} processes were seen, far below the limit of ${limit}: the limit that acted is not the policy's`,
        evidence,
      };
    }
    return { verdict: 'held', reason: `forks were refused at the limit (${refused} refusals counted by the pids cgroup, peak ${peak} of ${limit})`, evidence };
  },
};
