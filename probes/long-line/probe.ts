import type { SecurityProbe } from '../../model/probe.js';
import { judgeOutputBudget } from '../_shared/output-budget.js';

const LINE = 16 * 1024 * 1024;

export const longLine: SecurityProbe = {
  kind: 'security',
  id: 'long-line',
  title: 'one 16 MiB line without a newline',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'stdout-flood',
  remediation: 'Cap output by bytes, not by lines: a line-buffered reader waits for a newline that never comes.',
  attack: ['T1499'],
  cwe: ['CWE-770', 'CWE-400'],
  args: () => ({ stream: 'stdout', mode: 'long-line', bytes: LINE }),
  confirmStopped: true,
  judge: (obs, ctx) => judgeOutputBudget(obs, ctx, LINE, 'stdout'),
};
