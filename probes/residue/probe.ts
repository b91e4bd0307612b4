import { exitEvidence, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';

export const residue: SecurityProbe = {
  kind: 'security',
  id: 'residue',
  title: 'a marker left by one environment is visible in the next fresh one',
  category: 'lifecycle',
  policyItem: 'lifecycle.freshEnvironment',
  severity: 'medium',
  payload: 'residue',
  remediation: 'Build every environment from scratch: a new workspace and private /tmp, /var/tmp, /dev/shm and home, discarded on destroy.',
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
    const evidence = [
      outside('fresh-environment-output', seen.length > 0 ? seen.join('; ') : `the token of phase 1 did not appear in phase 2's output`, 'stdout of phase 2'),
      exitEvidence(second.exec),
    ];
    if (seen.length > 0) return { verdict: 'crossed', reason: `a fresh environment saw what the previous one left: ${seen.length} place(s)`, evidence };
    const control = second.token('residue-control');
    if (!text.includes(control)) {
      return {
        verdict: 'inconclusive',
        reason:
          "phase 2's positive control (a marker it left itself and searched for the same way) was not found: the search cannot see, so finding nothing proves nothing",
        evidence,
      };
    }
    // Phase 1's own word can only withhold: held needs a marker left somewhere, and phase 2's search seeing in each such place.
    const firstText = Buffer.from(obs.exec.stdout.headBase64, 'base64').toString('utf8');
    const left = [...firstText.matchAll(/^left marker in (\S+)$/gm)].map((m) => m[1] ?? '');
    if (left.length === 0)
      return {
        verdict: 'inconclusive',
        reason:
          'phase 1 left no marker anywhere (it could write none of /tmp, /var/tmp, /dev/shm, home, the workspace): there was nothing for the next environment to find',
        evidence,
      };
    const blind = left.filter((place) => !text.split('\n').includes(`found ${control} in ${place}`));
    if (blind.length > 0) {
      return {
        verdict: 'inconclusive',
        reason: `phase 1 left markers in ${left.join(', ')}, but phase 2's own marker was not found in ${blind.join(', ')}: its search of that place cannot see`,
        evidence,
      };
    }
    return { verdict: 'held', reason: `the second, fresh environment found nothing the first one left behind (in ${left.join(', ')})`, evidence };
  },
};
