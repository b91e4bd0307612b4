import type { SecurityProbe } from '../../model/probe.js';
import { judgeOutputBudget } from '../_shared/output-budget.js';

export const FLOOD_BYTES = 64 * 1024 * 1024;

export const stdoutFlood: SecurityProbe = {
  kind: 'security',
  id: 'stdout-flood',
  title: 'write 64 MiB to stdout against a 2 MB output budget',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'stdout-flood',
  remediation: 'Cap stdout+stderr in the sandbox (truncate, keep the hash and the tail) and stop the program when the cap is reached.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  args: () => ({ stream: 'stdout', mode: 'flood', bytes: FLOOD_BYTES }),
  confirmStopped: true,
  judge: (obs, ctx) => judgeOutputBudget(obs, ctx, FLOOD_BYTES, 'stdout'),
};
