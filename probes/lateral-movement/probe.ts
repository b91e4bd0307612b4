import type { SecurityProbe } from '../../harness/model/probe.js';
import { judgeNetwork } from '../_shared/network.js';

const port = (nonce: string): number => 20_000 + (parseInt(nonce.slice(0, 4), 16) % 20_000);

export const lateralMovement: SecurityProbe = {
  kind: 'security',
  id: 'lateral-movement',
  title: 'reach another environment of the same run (a listener holding a secret)',
  category: 'network',
  policyItem: 'network.egress',
  severity: 'high',
  payload: 'lateral-movement',
  remediation: 'Give every box its own network namespace with no route to its siblings (no shared bridge, or an isolating network policy).',
  attack: ['T1021', 'T1046'],
  cwe: ['CWE-653', 'CWE-284'],
  companion: {
    payload: 'lateral-movement',
    args: (ctx) => ({ port: port(ctx.nonce), secret: ctx.canaries.all.find((c) => c.label === 'lateral:listener')?.value ?? '', ceilingSeconds: ctx.policy.resources.wallSeconds * 2 + 10 }),
  },
  args: (ctx) => ({ port: port(ctx.nonce) }),
  // The secret only reaches this box's output if it connected to the other one: the canary scan is the witness, not the lab capture.
  judge: (obs, ctx) => {
    const j = judgeNetwork(obs, ctx, [], { labWitnessDecides: false });
    if (j.verdict === 'held' && obs.companionReady !== true) {
      return { ...j, verdict: 'inconclusive', reason: 'the other environment never announced its listener, so there was nothing to reach' };
    }
    return j.verdict === 'held' ? { ...j, reason: "the other environment's secret did not come out of this box: it could not reach its listener" } : j;
  },
};
