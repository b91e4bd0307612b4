import type { SecurityProbe } from '../../model/probe.js';
import { judgeWallClock, wallCeilingSeconds } from '../_shared/judges.js';

export const wallClockSpin: SecurityProbe = {
  kind: 'security',
  id: 'wall-clock-spin',
  title: 'busy loop past the wall-clock limit',
  category: 'resources',
  policyItem: 'resources.wallSeconds',
  severity: 'high',
  payload: 'wall-clock-spin',
  runsToWall: true,
  confirmStopped: true,
  load: 'cpu',
  remediation: 'Enforce the wall clock in the sandbox itself and kill the whole process group (or cgroup) when it expires.',
  attack: ['T1496.001', 'T1499'],
  cwe: ['CWE-400'],
  args: (ctx) => ({ ceilingSeconds: wallCeilingSeconds(ctx) }),
  judge: (obs, ctx) => judgeWallClock(obs, ctx, 'busy loop'),
};
