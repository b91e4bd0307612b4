import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { outputText } from '../_shared/exposure-judges.js';
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
    args: (ctx) => ({
      port: port(ctx.nonce),
      secret: ctx.canaries.all.find((c) => c.label === 'lateral:listener')?.value ?? '',
      ceilingSeconds: ctx.policy.resources.wallSeconds * 2 + 10,
    }),
  },
  args: (ctx) => ({ port: port(ctx.nonce) }),
  // The secret only reaches this box's output if it connected to the other one: the canary scan is the witness, not the lab capture.
  judge: (obs, ctx) => judgeLateral(obs, judgeNetwork(obs, ctx, [], { labWitnessDecides: false })),
};

/**
 * Held needs the attack tried where the other box said it was: the payload echoes the announcement it was given
 * (a backend that dropped it leaves the payload guessing) and reports an outcome for every announced address.
 */
export function judgeLateral(obs: Observation, j: Judgement): Judgement {
  if (j.verdict !== 'held') return j;
  if (obs.companionReady !== true)
    return { ...j, verdict: 'inconclusive', reason: 'the other environment never announced its listener, so there was nothing to reach' };
  const announced = obs.companionAnnounced ?? '';
  const text = outputText(obs);
  if (!text.split('\n').includes(`the other environment announced: ${announced}`)) {
    return {
      ...j,
      verdict: 'inconclusive',
      reason: `the payload never received the other environment's announcement (${JSON.stringify(announced.slice(0, 80))}): it could not look where the listener was`,
    };
  }
  const port = /^port (\d+)/.exec(announced)?.[1];
  const addresses = announced.includes(' addresses ') ? (announced.split(' addresses ', 2)[1] ?? '').split(',').filter((a) => a !== '') : [];
  const untried = addresses.filter((a) => !text.includes(`${a}:${port ?? ''}: `) && !text.includes(`${a}:${port ?? ''} answered`));
  if (untried.length > 0) {
    return {
      ...j,
      verdict: 'inconclusive',
      reason: `the payload reported no attempt at the other environment's announced address(es) ${untried.slice(0, 4).join(', ')}: held needs each tried`,
    };
  }
  return {
    ...j,
    reason: `the other environment's secret did not come out of this box: it could not reach its listener (tried loopback${addresses.length > 0 ? ` and ${addresses.join(', ')}` : ''})`,
  };
}
