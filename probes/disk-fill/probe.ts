import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';
import { outputText } from '../_shared/exposure-judges.js';
import { healthEvidence, hostHarmJudgement, stopCause, adapterCountersEvidence } from '../_shared/judges.js';

const MiB = 2 ** 20;
/** In the workspace, so the harness can measure it from outside through the download API. */
export const FILL_FILE = 'sandcheck-fill.bin';
/** "Reached its limit": a filesystem's own metadata takes a few percent of a sized volume. */
const NEAR_LIMIT = 0.9;
/** Host free disk can move with other work on the machine: only a drop well past the limit counts. */
const HOST_DROP_SLACK = 128 * MiB;

export const diskFill: SecurityProbe = {
  kind: 'security',
  id: 'disk-fill',
  title: 'write past the temp-disk limit (limit + 256 MB, measured from outside)',
  category: 'resources',
  policyItem: 'resources.diskMb',
  severity: 'medium',
  payload: 'disk-fill',
  remediation:
    'Give the box a sized filesystem of its own (an ext4 or XFS volume or image, an XFS project quota) instead of the host disk; a tmpfs is charged to the memory limit, which then stops a writer before the disk limit does.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  watchHost: true,
  readsCgroup: true,
  args: (ctx) => ({ ceilingBytes: (ctx.policy.resources.diskMb + 256) * MiB, file: FILL_FILE }),
  artifacts: [FILL_FILE],
  hostRead: [FILL_FILE],
  judge: (obs, ctx) => {
    const harmed = hostHarmJudgement(obs);
    if (harmed) return harmed;
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const limit = ctx.policy.resources.diskMb * MiB;
    const mib = (n: number): number => Math.round(n / MiB);
    const fill = obs.artifacts.find((a) => a.path === FILL_FILE);
    const apiSize = fill && (fill.kind === 'file' || fill.kind === 'hardlink') ? fill.size : undefined;
    // Where the workspace is on the host and the harness saw the file there itself, its own lstat decides.
    const onHost = obs.hostRead?.after.find((f) => f.path === FILL_FILE);
    const hostSize = onHost?.kind === 'file' ? onHost.size : undefined;
    const size = hostSize ?? apiSize;
    const h = obs.exec.hostHealth;
    const drop = h ? h.before.diskFreeBytes - h.worst.diskFreeBytes : 0;
    const r = obs.exec.resources;
    const memoryStopped = obs.exec.backendReport.oomKilled === true || (r?.oomKills ?? 0) > 0;
    const cause = stopCause(obs);
    const evidence = [
      outside(
        'box-disk',
        apiSize === undefined
          ? `the fill file was not found in the workspace after the exec (${fill?.kind ?? 'not listed'})`
          : `${mib(apiSize)} MiB on the box's filesystem after the exec (limit ${ctx.policy.resources.diskMb} MiB)`,
        'download API lstat',
      ),
      ...(hostSize !== undefined
        ? [outside('host-read', `${mib(hostSize)} MiB (${hostSize} bytes) in the workspace on the host`, 'host lstat of the workspace')]
        : []),
      outside('host-disk', `host free disk fell by ${mib(drop)} MiB while it ran`, 'host'),
      ...(r
        ? [
            outside(
              'cgroup',
              `memory peak ${r.memoryPeakBytes === undefined ? 'n/a' : `${mib(r.memoryPeakBytes)} MiB`} of ${r.memoryLimitBytes === undefined ? 'n/a' : `${mib(r.memoryLimitBytes)} MiB`}; OOM kills ${r.oomKills ?? 'n/a'}`,
              r.source,
            ),
          ]
        : []),
      outside('stop-cause', cause),
      exitEvidence(obs.exec),
      ...healthEvidence(obs),
      payloadReport(obs.exec),
      ...adapterCountersEvidence(obs),
    ];
    if (size !== undefined && size > limit) {
      return { verdict: 'crossed', reason: `the box held ${mib(size)} MiB on its temp disk, past the ${ctx.policy.resources.diskMb} MiB limit`, evidence };
    }
    if (drop > limit + HOST_DROP_SLACK) {
      return {
        verdict: 'crossed',
        reason: `the box took ${mib(drop)} MiB of the host's disk, past the ${ctx.policy.resources.diskMb} MiB temp-disk limit`,
        evidence,
      };
    }
    if (size === undefined) return { verdict: 'inconclusive', reason: 'the fill file could not be measured from outside after the exec', evidence };
    if (hostSize !== undefined && apiSize !== hostSize) {
      return {
        verdict: 'inconclusive',
        reason: `the download API's size of the fill file (${apiSize ?? 'none'} bytes) is not the host's own (${hostSize} bytes): the measurement cannot be trusted`,
        evidence,
      };
    }
    if (memoryStopped) {
      return {
        verdict: 'inconclusive',
        reason: `the memory limit stopped the writer first (${cause}) at ${mib(size)} MiB of a ${ctx.policy.resources.diskMb} MiB disk limit: the disk limit was never reached (a tmpfs is charged to the memory cgroup)`,
        evidence,
      };
    }
    if (obs.exec.killedBy !== 'none' || obs.exec.backendReport.timedOut === true) {
      return { verdict: 'inconclusive', reason: `the writer was stopped by a clock (${cause}) at ${mib(size)} MiB, not by the disk limit`, evidence };
    }
    // The payload's own word can only withhold: EFBIG is a per-file size limit (RLIMIT_FSIZE, --ulimit fsize), which a
    // second file passes; only the disk itself full (ENOSPC, EDQUOT) is the disk limit.
    if (/write stopped after \d+ MiB: EFBIG/.test(outputText(obs))) {
      return {
        verdict: 'inconclusive',
        reason: `a per-file size limit (EFBIG), not the disk limit, stopped the writer at ${mib(size)} MiB: another file could go on filling the disk`,
        evidence,
      };
    }
    if (size < limit * NEAR_LIMIT) {
      return {
        verdict: 'inconclusive',
        reason: `the writer stopped at ${mib(size)} MiB, short of the ${ctx.policy.resources.diskMb} MiB limit, for a reason the harness did not observe (${cause})`,
        evidence,
      };
    }
    return {
      verdict: 'held',
      reason: `the box's filesystem filled at ${mib(size)} MiB of the ${ctx.policy.resources.diskMb} MiB limit (measured from outside), with no OOM kill and no clock stop`,
      evidence,
    };
  },
};
