import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';
import { healthEvidence, hostHarmJudgement, stopCause } from '../_shared/judges.js';

export const forkBomb: SecurityProbe = {
  kind: 'security',
  id: 'fork-bomb',
  title: 'fork past the process limit (bounded at 1024, then reaped)',
  category: 'resources',
  policyItem: 'resources.processes',
  severity: 'high',
  payload: 'fork-bomb',
  remediation: 'Limit processes with a pids cgroup (pids.max) per box; RLIMIT_NPROC counts per uid across the whole host and does not apply to root.',
  sampleProcesses: true,
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
      ...(r ? [outside('cgroup', `pids peak ${r.pidsPeak ?? 'n/a'}, refused forks (pids.events max) ${r.pidsMaxEvents ?? 'n/a'}, limit ${r.pidsLimit ?? 'n/a'}`, r.source)] : []),
      ...(sampled !== undefined ? [outside('host-process-scan', `at most ${sampled} processes of the box alive at once`, 'host /proc')] : []),
      outside('stop-cause', stopCause(obs)),
      exitEvidence(obs.exec),
      ...healthEvidence(obs),
      payloadReport(obs.exec),
    ];
    if (peak > limit) return { verdict: 'crossed', reason: `${peak} processes ran at once, past the limit of ${limit}`, evidence };
    if ((r?.pidsMaxEvents ?? 0) > 0) return { verdict: 'held', reason: `forks were refused at the limit (${r?.pidsMaxEvents} refusals, peak ${peak} of ${limit})`, evidence };
    if (peak >= limit * 0.75) return { verdict: 'held', reason: `process count stopped at ${peak}, within the limit of ${limit}`, evidence };
    return { verdict: 'inconclusive', reason: `only ${peak} processes were observed and no refusal was counted: the limit was never demonstrably reached`, evidence };
  },
};
