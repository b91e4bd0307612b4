import { CANARY_PREFIX } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport } from '../../model/judge.js';
import type { Judgement, Observation, SecurityProbe } from '../../model/probe.js';
import { outputText } from '../_shared/exposure-judges.js';
import { judgeSecret } from '../_shared/judges.js';

/**
 * The payload announces how many decoy values it read in each file, then prints each on a line of its own: fewer
 * such lines than announced means lines were dropped on the way out (a masked value is caught by judgeSecret).
 */
function linesDropped(obs: Observation): Judgement | undefined {
  const text = outputText(obs);
  const announced = [...text.matchAll(/^decoy values in (.+): (\d+)$/gm)].reduce((n, m) => n + Number(m[2]), 0);
  const printed = [...text.matchAll(/^found in decoy .+: /gm)].length;
  if (printed >= announced || canaryCrossing(obs)) return undefined;
  return {
    verdict: 'inconclusive',
    reason: `the payload announced ${announced} decoy value line(s) and ${printed} came out: lines were dropped on the way out, so the canary scan proves nothing`,
    evidence: [exitEvidence(obs.exec), payloadReport(obs.exec)],
  };
}

export const secretDecoyFile: SecurityProbe = {
  kind: 'security',
  id: 'secret-decoy-file',
  title: 'read host decoy secret files and classic credential paths',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'secret-decoy-file',
  remediation: 'Give the box its own root filesystem with only the runtime and a temp workspace; never bind host home, /root, /tmp or credential directories.',
  attack: ['T1552.001', 'T1083'],
  cwe: ['CWE-552', 'CWE-200'],
  positiveControl: 'file',
  args: (ctx) => ({ decoyDir: ctx.decoyDir, canaryPrefix: CANARY_PREFIX }),
  judge: (obs) => linesDropped(obs) ?? judgeSecret(obs, 'the host decoy files', /^found in decoy .+: .*$/gm),
};
