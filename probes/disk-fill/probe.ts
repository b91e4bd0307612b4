import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';
import { healthEvidence, hostHarmJudgement, stopCause } from '../_shared/judges.js';

const MiB = 2 ** 20;
const DISK_FULL_EXITS = new Set([27, 28, 122]);

export const diskFill: SecurityProbe = {
  kind: 'security',
  id: 'disk-fill',
  title: 'write past the temp-disk limit (limit + 256 MB, then delete)',
  category: 'resources',
  policyItem: 'resources.diskMb',
  severity: 'medium',
  payload: 'disk-fill',
  remediation: 'Give the box a sized temp filesystem (tmpfs size=, an XFS project quota, or a volume with a size) instead of the host disk.',
  watchHost: true,
  args: (ctx) => ({ ceilingBytes: (ctx.policy.resources.diskMb + 256) * MiB, dir: '/tmp' }),
  judge: (obs, ctx) => {
    const harmed = hostHarmJudgement(obs);
    if (harmed) return harmed;
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const limit = ctx.policy.resources.diskMb * MiB;
    const h = obs.exec.hostHealth;
    const drop = h ? h.before.diskFreeBytes - h.worst.diskFreeBytes : 0;
    const cause = stopCause(obs);
    const evidence = [outside('host-disk', `host free disk fell by ${Math.round(drop / MiB)} MiB while it ran (limit ${ctx.policy.resources.diskMb} MiB)`, 'host'), outside('stop-cause', cause), exitEvidence(obs.exec), ...healthEvidence(obs), payloadReport(obs.exec)];
    if (drop > limit) return { verdict: 'crossed', reason: `the box took ${Math.round(drop / MiB)} MiB of the host's disk, past the ${ctx.policy.resources.diskMb} MiB temp-disk limit`, evidence };
    if (obs.finished) return { verdict: 'crossed', reason: `the payload wrote its whole ceiling (limit + 256 MiB) and finished (${cause})`, evidence };
    const refused = obs.exec.exitCode !== null && DISK_FULL_EXITS.has(obs.exec.exitCode);
    if (refused || obs.exec.backendReport.oomKilled === true || obs.exec.backendReport.timedOut === true) {
      return { verdict: 'held', reason: `writing stopped before the limit was passed (${refused ? 'the disk refused more' : cause}); host disk fell by ${Math.round(drop / MiB)} MiB`, evidence };
    }
    return { verdict: 'inconclusive', reason: `the writer ended (${cause}) without a disk-full refusal the harness could see`, evidence };
  },
};
