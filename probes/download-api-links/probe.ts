import { join } from 'node:path';
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { ProbeContext, SecurityProbe } from '../../model/probe.js';

const decoyFile = (ctx: ProbeContext): string => join(ctx.decoyDir, '.aws', 'credentials');

/** The backend's own download API, judged apart from any exporter: does it read through links? */
export const downloadApiLinks: SecurityProbe = {
  kind: 'security',
  id: 'download-api-links',
  title: "the backend's download API follows a symlink to a host file",
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'high',
  payload: 'probes/_shared/export-attack',
  remediation: 'A file download API must lstat and refuse links (and hardlinked files) instead of reading through them.',
  attack: ['T1005', 'T1552.001'],
  cwe: ['CWE-59', 'CWE-61'],
  artifacts: ['result.txt'],
  args: (ctx) => ({ mode: 'symlink-host', decoyFile: decoyFile(ctx), hop: true }),
  judge: (obs) => {
    const notRun = unlessAttempted(obs, true);
    if (notRun) return notRun;
    const link = obs.artifacts.find((a) => a.path === 'result.txt');
    const leaked = obs.canaryHits.filter((h) => h.where.startsWith('artifact:'));
    const evidence = [
      outside(
        'download-api',
        link
          ? `result.txt came back as ${link.kind}${link.content ? ` with ${link.content.byteLength} bytes of content` : ' without content'}`
          : 'result.txt did not come back',
        'getFiles',
      ),
      ...leaked.map((h) => outside('canary-scan', `decoy value ${h.label} in what the download API returned`, h.where)),
      exitEvidence(obs.exec),
      payloadReport(obs.exec),
    ];
    if (leaked.length > 0 || (link?.kind === 'symlink' && link.content)) {
      return { verdict: 'crossed', reason: 'the download API read through a symlink and handed over a host file', evidence };
    }
    if (!link || link.kind === 'missing') return { verdict: 'inconclusive', reason: 'the symlink artifact did not come back at all', evidence };
    // The payload made a symlink: any other kind means the API followed it (to something without a decoy value) or
    // misreports what it found; either way nothing shows that it refuses links.
    if (link.kind !== 'symlink')
      return {
        verdict: 'inconclusive',
        reason: `the download API reported a ${link.kind} where the payload made a symlink: it followed the link or misreports it, so its refusal of links is not shown`,
        evidence,
      };
    // The payload's link points at a hop named by this execution's challenge: only an API that read the link knows it.
    const hop = `sc-link-${obs.token('link')}`;
    if (link.linkTarget === undefined)
      return {
        verdict: 'inconclusive',
        reason: 'the download API reported a symlink without its target: nothing shows it looked at the link it refused',
        evidence,
      };
    if (link.linkTarget !== hop) {
      return {
        verdict: 'inconclusive',
        reason: `the symlink came back pointing at ${JSON.stringify(link.linkTarget.slice(0, 200))}, not at the hop the payload linked (${hop}): not the payload's link`,
        evidence,
      };
    }
    return {
      verdict: 'held',
      reason: `the download API reported the payload's symlink (to ${hop}, which leads to a host decoy) without following it`,
      evidence,
    };
  },
};
