import type { SecurityProbe } from '../../model/probe.js';
import { judgeWallClock, wallCeilingSeconds } from '../_shared/judges.js';

export const wallClockSleep: SecurityProbe = {
  kind: 'security',
  id: 'wall-clock-sleep',
  title: 'sleep forever without using CPU',
  category: 'resources',
  policyItem: 'resources.wallSeconds',
  severity: 'high',
  payload: 'wall-clock-sleep',
  runsToWall: true,
  confirmStopped: true,
  load: 'wait',
  remediation: 'A CPU-time limit does not stop a sleeper: enforce wall-clock time and kill the process group when it expires.',
  attack: ['T1499'],
  cwe: ['CWE-400'],
  args: (ctx) => ({ ceilingSeconds: wallCeilingSeconds(ctx) }),
  judge: (obs, ctx) => judgeWallClock(obs, ctx, 'sleeper'),
};
