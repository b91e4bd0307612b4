import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';

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
  load: 'wait',
  args: (ctx) => ({ heartbeatPath: `${ctx.hostProbeDir}/heartbeat`, ceilingSeconds: ctx.policy.resources.wallSeconds * 2 + 20 }),
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const hb = obs.heartbeat;
    const beating = hb !== undefined && hb.laterBytes > hb.afterDestroyBytes;
    const evidence = [
      ...obs.leftovers.map((l) => outside('teardown', l, 'host')),
      ...obs.survivors.map((s) => outside('host-process-scan', s, 'host /proc')),
      ...(hb ? [outside('heartbeat', `host heartbeat file ${hb.afterDestroyBytes} → ${hb.laterBytes} bytes over 1.2 s after destroy`, 'host file')] : []),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (obs.survivors.length > 0 || obs.leftovers.some((l) => l.startsWith('process')) || beating) {
      return { verdict: 'crossed', reason: 'a process of the box was still alive after the environment was destroyed', evidence };
    }
    if (!obs.survivorSeenAlive) {
      return { verdict: 'inconclusive', reason: "the host's process scan never saw the daemon alive while the box ran: a witness that cannot see the box's processes cannot tell that none survived", evidence };
    }
    evidence.unshift(outside('host-process-scan', 'the daemon was seen alive on the host while the box ran', 'host /proc'));
    return { verdict: 'held', reason: 'after destroy no process of the box remained and nothing kept writing', evidence };
  },
};
