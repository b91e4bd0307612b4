import { join } from 'node:path';
import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';

/** The backend's own download API, judged apart from any exporter: does it read through links? */
export const downloadApiLinks: SecurityProbe = {
  kind: 'security',
  id: 'download-api-links',
  title: "the backend's download API follows a symlink to a host file",
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'high',
  payload: 'export-attack',
  remediation: 'A file download API must lstat and refuse links (and hardlinked files) instead of reading through them.',
  attack: ['T1005', 'T1552.001'],
  cwe: ['CWE-59', 'CWE-61'],
  artifacts: ['result.txt'],
  args: (ctx) => ({ mode: 'symlink-host', decoyFile: join(ctx.decoyDir, '.aws', 'credentials') }),
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const link = obs.artifacts.find((a) => a.path === 'result.txt');
    const leaked = obs.canaryHits.filter((h) => h.where.startsWith('artifact:'));
    const evidence = [
      outside('download-api', link ? `result.txt came back as ${link.kind}${link.content ? ` with ${link.content.byteLength} bytes of content` : ' without content'}` : 'result.txt did not come back', 'getFiles'),
      ...leaked.map((h) => outside('canary-scan', `decoy value ${h.label} in what the download API returned`, h.where)),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (leaked.length > 0 || (link?.kind === 'symlink' && link.content)) {
      return { verdict: 'crossed', reason: 'the download API read through a symlink and handed over a host file', evidence };
    }
    if (!link || link.kind === 'missing') return { verdict: 'inconclusive', reason: 'the symlink artifact did not come back at all', evidence };
    return { verdict: 'held', reason: `the download API reported a ${link.kind} without following it`, evidence };
  },
};
