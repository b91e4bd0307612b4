import type { SecurityProbe } from '../../model/probe.js';
import { judgeOutputBudget } from '../_shared/output-budget.js';

const FLOOD = 64 * 1024 * 1024;

export const stderrFlood: SecurityProbe = {
  kind: 'security',
  id: 'stderr-flood',
  title: 'write 64 MiB to stderr against a 2 MB output budget',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'stdout-flood',
  remediation: 'Count stderr in the same output budget as stdout and stop the program when it is spent.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  args: () => ({ stream: 'stderr', mode: 'flood', bytes: FLOOD }),
  confirmStopped: true,
  judge: (obs, ctx) => judgeOutputBudget(obs, ctx, FLOOD, 'stderr'),
};
