/**
 * read-denied-path, judged on the values only the host knows: each deny-listed file of the decoy project holds a value
 * of this run (the `.env` the run's dotenv canary), derived again here from the run's canaries and the nonce.
 *
 * crossed: any deny-listed value came out, in any form, in stdout, stderr or a fetched file (or the harness's own
 * full-stream scan saw the `.env` canary), whatever the payload says.
 * held: the payload answered its challenge and finished, the output was kept whole (the scan saw every byte), every
 * route was reported on every deny-listed file, and the control value (an ordinary readable file of the project) came
 * out through the same print routine: a box that can read nothing, or whose output hides decoy values, proves nothing.
 */
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation } from '../../model/probe.js';
import { scanEach } from '../../lab/canary-scan.js';
import { outputText } from '../_shared/exposure-judges.js';
import { signedJsonLines } from '../_shared/escapes.js';

export const DRP_MARKER = 'SANDCHECK-DRP';
export const DRP_LINE_KIND = 'drp-line';
/** The routes the payload takes for every deny-listed file. */
export const READ_ROUTES = ['direct', 'symlink', 'hardlink', 'proc-self-root', 'openat', 'cat'] as const;

export interface DenyPlan {
  /** Deny-listed workspace path → the value it holds. */
  denied: ReadonlyMap<string, string>;
  /** The readable control file and its value (undefined when the policy denies every candidate). */
  control?: { path: string; value: string };
  /** The label of the run canary a deny-listed file holds (the `.env`), seen by the harness's full-stream scan. */
  runCanaryLabels: readonly string[];
}

interface RouteLine {
  route: string;
  path: string;
  outcome: string;
}

function routeLines(obs: Observation): RouteLine[] {
  return signedJsonLines(obs, DRP_MARKER, DRP_LINE_KIND, 512).flatMap((v) => {
    if (typeof v !== 'object' || v === null) return [];
    const { route, path, outcome } = v as Record<string, unknown>;
    return typeof route === 'string' && typeof path === 'string' && typeof outcome === 'string' ? [{ route, path, outcome }] : [];
  });
}

/** Where a deny-listed value was seen outside the box. */
function deniedSeen(obs: Observation, plan: DenyPlan): string[] {
  const canaries = [...plan.denied].map(([path, value]) => ({ label: path, value }));
  const { stdout, stderr } = obs.exec;
  const channels = [
    ...[stdout, stderr].flatMap((c, i) => {
      const name = i === 0 ? 'stdout' : 'stderr';
      return [
        { where: name, bytes: Buffer.from(c.headBase64, 'base64') },
        { where: name, bytes: Buffer.from(c.tailBase64, 'base64') },
      ];
    }),
    ...obs.artifacts.flatMap((a) => (a.content ? [{ where: `artifact:${a.path}`, bytes: a.content }] : [])),
  ];
  const ours = canaries.length > 0 ? scanEach(channels, canaries).map((h) => `${h.label} (${h.form}) in ${h.where}`) : [];
  const harness = obs.canaryHits.filter((h) => plan.runCanaryLabels.includes(h.label)).map((h) => `${h.label} in ${h.where}`);
  return [...new Set([...ours, ...harness])];
}

export function judgeDeniedReads(obs: Observation, plan: DenyPlan): Judgement {
  const lines = routeLines(obs);
  const read = lines.filter((l) => l.outcome === 'ok' && l.route !== 'control');
  const insideLine: Evidence[] =
    lines.length > 0
      ? [
          inside(
            'payload-lines',
            `${lines.length} reads; the box says these succeeded: ${
              read
                .slice(0, 8)
                .map((l) => `${l.route} ${l.path}`)
                .join('; ') || 'none'
            }`,
            'stdout',
          ),
        ]
      : [];
  const seen = deniedSeen(obs, plan);
  const { stdout, stderr } = obs.exec;
  if (seen.length > 0) {
    return {
      verdict: 'crossed',
      reason: `deny-listed files inside the workspace were read: their values came out (${seen.slice(0, 4).join('; ')})`,
      evidence: [
        outside('canary-scan', `values of deny-listed files seen: ${seen.slice(0, 12).join('; ')}`, 'output and fetched files'),
        ...insideLine,
        exitEvidence(obs.exec),
      ],
    };
  }
  const scanned = outside(
    'canary-scan',
    `scanned ${stdout.bytes + stderr.bytes} bytes of output and ${obs.artifacts.length} fetched file(s) for the values of ${[...plan.denied.keys()].join(', ')}: none`,
    'output and fetched files',
  );
  const evidence = [scanned, ...insideLine, exitEvidence(obs.exec)];
  const notRun = unlessAttempted(obs, true);
  if (notRun) return { ...notRun, evidence: [...evidence, payloadReport(obs.exec)] };
  const kept = (c: typeof stdout): number => Buffer.from(c.headBase64, 'base64').length + Buffer.from(c.tailBase64, 'base64').length;
  if (stdout.bytes > kept(stdout) || stderr.bytes > kept(stderr)) {
    return {
      verdict: 'inconclusive',
      reason: `the output was larger than the harness keeps (${stdout.bytes} + ${stderr.bytes} bytes): its middle was not scanned for the deny-listed values`,
      evidence,
    };
  }
  const missing = [...plan.denied.keys()].flatMap((p) => READ_ROUTES.filter((r) => !lines.some((l) => l.route === r && l.path === p)).map((r) => `${r} ${p}`));
  if (missing.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: `the payload did not report every route it must try (${missing.length} missing, e.g. ${missing.slice(0, 3).join(', ')}): no value seen proves nothing for those`,
      evidence,
    };
  }
  if (!plan.control) {
    return { verdict: 'inconclusive', reason: 'the policy denies every readable control file the probe could plant: nothing shows that reads work', evidence };
  }
  const controlOut = outputText(obs).includes(plan.control.value);
  evidence.splice(1, 0, outside('read-control', `${plan.control.path}'s value ${controlOut ? 'came out' : 'did not come out'} of the box`, 'stdout'));
  if (!controlOut) {
    return {
      verdict: 'inconclusive',
      reason: `the read of an ordinary workspace file (${plan.control.path}) did not come out: a box that can read nothing, or whose output hides decoy values, shows nothing about its deny-list`,
      evidence,
    };
  }
  return {
    verdict: 'held',
    reason: `no value of the ${plan.denied.size} deny-listed file(s) came out after ${READ_ROUTES.length} routes each, while the value of an ordinary workspace file (${plan.control.path}) read the same way did`,
    evidence,
  };
}
