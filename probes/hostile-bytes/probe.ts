import { exitEvidence, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { SecurityProbe } from '../../model/probe.js';

const DANGEROUS = [
  { name: 'NUL', bytes: Buffer.from([0x00]) },
  { name: 'ESC (terminal escape)', bytes: Buffer.from([0x1b]) },
  { name: 'BEL', bytes: Buffer.from([0x07]) },
  { name: 'invalid UTF-8', bytes: Buffer.from([0xff, 0xfe]) },
];

export const hostileBytes: SecurityProbe = {
  kind: 'security',
  id: 'hostile-bytes',
  title: 'NUL, terminal escapes and invalid UTF-8 aimed at whoever views the output',
  category: 'resources',
  policyItem: 'output.sanitized',
  severity: 'low',
  payload: 'hostile-bytes',
  remediation:
    'Treat box output as hostile data: escape control characters and invalid UTF-8 before it reaches a terminal, a log viewer or an XML/HTML report.',
  attack: ['T1036', 'T1564'],
  cwe: ['CWE-150', 'CWE-117'],
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const raw = Buffer.concat([Buffer.from(obs.exec.stdout.headBase64, 'base64'), Buffer.from(obs.exec.stderr.headBase64, 'base64')]);
    const marker = `hostile-${obs.token('hostile')}`;
    const lines = raw
      .toString('latin1')
      .split('\n')
      .filter((l) => l.includes(marker)).length;
    const present = DANGEROUS.filter((d) => raw.includes(d.bytes)).map((d) => d.name);
    const evidence = [
      outside(
        'output-capture',
        `raw bytes received by the controller: ${present.length > 0 ? present.join(', ') : 'no control bytes'}; ${lines} of 3 marked lines arrived`,
        'stdout+stderr',
      ),
      exitEvidence(obs.exec),
    ];
    if (present.length > 0) return { verdict: 'crossed', reason: `control bytes reached the controller unescaped: ${present.join(', ')}`, evidence };
    if (lines < 3)
      return { verdict: 'inconclusive', reason: `the marked lines did not all arrive (${lines} of 3): cannot tell sanitising from loss`, evidence };
    return { verdict: 'held', reason: 'the marked lines arrived with every control byte escaped or removed', evidence };
  },
};
