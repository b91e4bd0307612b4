import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { GONE_WITHIN_MS, programMark } from '../../lab/kernel-carriers.js';
import { outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { outputText } from '../_shared/exposure-judges.js';

/**
 * On a user-space kernel (gVisor) the daemon never shows as a host process: the host found its own address space by
 * its mark while the box ran, and after destroy looks that process and its kernel up again.
 */
function judgeMarked(obs: Observation, evidence: Evidence[]): Judgement | undefined {
  const marked = obs.exec.userSpaceKernel?.marked;
  const after = obs.carriersAfterDestroy ?? [];
  if (!marked || after.length < 2 || !outputText(obs).includes('daemon started')) return undefined;
  const pids = after.map((c) => `${c.role} (pid ${c.pid})`).join(' and ');
  evidence.unshift(outside('host-proc-mem', `the daemon's own address space while the box ran: ${marked.tie}`, `/proc/${marked.addressSpace.pid}/mem`));
  const writing = obs.heartbeat ? ' and nothing kept writing' : '';
  return {
    verdict: 'held',
    reason: `the host saw the daemon running on a user-space kernel (${marked.tie}); after destroy its ${pids} no longer ran${writing}`,
    evidence,
  };
}

export const surviveTeardown: SecurityProbe = {
  kind: 'security',
  id: 'survive-teardown',
  title: 'a daemonised child outlives the destroyed environment',
  category: 'lifecycle',
  policyItem: 'lifecycle.destroyAfter',
  severity: 'high',
  payload: 'survive-teardown',
  remediation: 'Kill the whole box on teardown through its PID namespace or cgroup (freeze, kill, verify empty), not by its first pid.',
  attack: ['T1611'],
  cwe: ['CWE-404', 'CWE-772'],
  watchSurvivor: true,
  // Where the host cannot see the daemon as a process of its own, it looks for the daemon's address space by its mark.
  sampleProcesses: true,
  kernelCarriers: 'marked-program',
  load: 'wait',
  // The mark, not the survivor's name (survivorName: the payload joins them): a launcher's command line carries the
  // payload's arguments, and the host's scan would take the launcher for the daemon.
  args: (ctx) => ({ heartbeatPath: `${ctx.hostProbeDir}/heartbeat`, ceilingSeconds: ctx.policy.resources.wallSeconds * 2 + 20, mark: programMark(ctx.nonce) }),
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const hb = obs.heartbeat;
    const beating = hb !== undefined && hb.laterBytes > hb.afterDestroyBytes;
    const running = (obs.carriersAfterDestroy ?? []).filter((c) => c.running);
    // Without the daemon's own address space found, the kernel is the one the payload's address space was tied to.
    const ran = obs.exec.userSpaceKernel?.marked ? 'the daemon' : 'the payload';
    const evidence = [
      ...obs.leftovers.map((l) => outside('teardown', l, 'host')),
      ...obs.survivors.map((s) => outside('host-process-scan', s, 'host /proc')),
      ...(obs.carriersAfterDestroy ?? []).map((c) =>
        outside(
          'host-proc-status',
          `${c.role} pid ${c.pid}, seen running ${ran}: ${c.running ? 'still ran (same start) after destroy; killed by the harness' : 'gone after destroy'}`,
          `/proc/${c.pid}/stat`,
        ),
      ),
      ...(hb ? [outside('heartbeat', `host heartbeat file ${hb.afterDestroyBytes} → ${hb.laterBytes} bytes over 1.2 s after destroy`, 'host file')] : []),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (running.length > 0) {
      // The kernel alone still running: the daemon's state lives in it, whichever address space runs it next.
      return {
        verdict: 'crossed',
        reason: `the user-space kernel's ${running.map((c) => `${c.role} (pid ${c.pid})`).join(' and ')} that ran ${ran} still ran ${GONE_WITHIN_MS / 1000} s after the environment was destroyed: the daemon can live on in it`,
        evidence,
      };
    }
    if (obs.survivors.length > 0 || obs.leftovers.some((l) => l.startsWith('process')) || beating) {
      return { verdict: 'crossed', reason: 'a process of the box was still alive after the environment was destroyed', evidence };
    }
    if (!obs.survivorSeenAlive) {
      return (
        judgeMarked(obs, evidence) ?? {
          verdict: 'inconclusive',
          reason:
            "the host's process scan never saw the daemon alive while the box ran: a witness that cannot see the box's processes cannot tell that none survived",
          evidence,
        }
      );
    }
    evidence.unshift(outside('host-process-scan', 'the daemon was seen alive on the host while the box ran', 'host /proc'));
    return { verdict: 'held', reason: 'after destroy no process of the box remained and nothing kept writing', evidence };
  },
};
