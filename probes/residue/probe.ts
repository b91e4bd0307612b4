import { exitEvidence, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';

export const residue: SecurityProbe = {
  kind: 'security',
  id: 'residue',
  title: 'a marker left by one environment is visible in the next fresh one',
  category: 'lifecycle',
  policyItem: 'lifecycle.freshEnvironment',
  severity: 'medium',
  payload: 'residue',
  remediation: 'Build every environment from scratch: private /tmp, /var/tmp, /dev/shm and home, discarded on destroy.',
  attack: ['T1080', 'T1074.001'],
  cwe: ['CWE-226', 'CWE-653'],
  args: () => ({ phase: 1 }),
  followUp: (ctx) => ({ phase: 2, firstNonce: ctx.nonce }),
  judge: (obs, ctx) => {
    const first = unlessAttempted(obs, true);
    if (first) return { ...first, reason: `phase 1: ${first.reason}` };
    const second = obs.followUp;
    if (!second) return { verdict: 'inconclusive', reason: 'the second environment never ran', evidence: [] };
    const notRun = unlessAttempted(second, true);
    if (notRun) return { ...notRun, reason: `phase 2: ${notRun.reason}` };
    const token = `residue-${ctx.nonce}`;
    const text = Buffer.from(second.exec.stdout.headBase64, 'base64').toString('utf8');
    const seen = text.split('\n').filter((l) => l.includes(token));
    const evidence = [outside('fresh-environment-output', seen.length > 0 ? seen.join('; ') : `the token of phase 1 did not appear in phase 2's output`, 'stdout of phase 2'), exitEvidence(second.exec)];
    if (seen.length > 0) return { verdict: 'crossed', reason: `a fresh environment saw what the previous one left: ${seen.length} place(s)`, evidence };
    if (!text.includes(second.token('residue-control'))) {
      return { verdict: 'inconclusive', reason: "phase 2's positive control (a marker it left itself and searched for the same way) was not found: the search cannot see, so finding nothing proves nothing", evidence };
    }
    return { verdict: 'held', reason: 'the second, fresh environment found nothing the first one left behind', evidence };
  },
};
