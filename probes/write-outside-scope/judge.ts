/**
 * crossed: a host file outside the policy's write scope changed or appeared (the host's own look after destroy).
 * held: the payload ran and finished, tried every route on every path it was given, its in-scope control landed
 * (its workspace write seen by the host, or through the download API where the workspace is not on the host), and
 * the host saw the decoy unchanged and every watched place without a new entry of this execution.
 */
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { signedJsonLines } from '../_shared/escapes.js';

export const WOS_MARKER = 'SANDCHECK-WOS';
export const WOS_LINE_KIND = 'wos-line';
export const CONTROL_FILE = 'wos-control.txt';
/** Routes the payload takes for each target file and each watched directory. */
export const TARGET_ROUTES = ['direct', 'symlink', 'hardlink', 'proc-self-root', 'proc-1-root'] as const;
export const DIR_ROUTES = ['direct', 'symlink', 'rename', 'proc-self-root', 'proc-1-root'] as const;

interface RouteLine {
  route: string;
  path: string;
  outcome: string;
}

function routeLines(obs: Observation): RouteLine[] {
  return signedJsonLines(obs, WOS_MARKER, WOS_LINE_KIND, 256).flatMap((v) => {
    if (typeof v !== 'object' || v === null) return [];
    const { route, path, outcome } = v as Record<string, unknown>;
    return typeof route === 'string' && typeof path === 'string' && typeof outcome === 'string' ? [{ route, path, outcome }] : [];
  });
}

/** A host path the policy lets the box write (an absolute prefix in files.writeScope). */
const granted = (ctx: ProbeContext, path: string): boolean =>
  (ctx.policy.files.writeScope ?? []).some((root) => root.startsWith('/') && (path === root || path.startsWith(`${root}/`)));

const pathOfLine = (l: string): string => l.replace(/^(changed|appeared): /, '').replace(/: .*$/, '');

export function judgeWriteOutside(obs: Observation, ctx: ProbeContext, want: { targets: readonly string[]; dirs: readonly string[] }): Judgement {
  const look = obs.hostResidue;
  const found = (look ?? []).filter((l) => /^(changed|appeared): /.test(l));
  const crossings = found.filter((l) => !granted(ctx, pathOfLine(l)));
  const lines = routeLines(obs);
  const wrote = lines.filter((l) => l.outcome === 'ok' && !l.route.startsWith('control'));
  const insideLine: Evidence[] =
    lines.length > 0
      ? [
          inside(
            'payload-lines',
            `${lines.length} attempts; the box says these succeeded: ${
              wrote
                .slice(0, 8)
                .map((l) => `${l.route} ${l.path}`)
                .join('; ') || 'none'
            }`,
            'stdout',
          ),
        ]
      : [];
  const hostLook = (look ?? []).slice(0, 12).join('; ');
  const evidence = [outside('host-file-diff', hostLook || 'the host did not look', 'host lstat, hash and listing'), ...insideLine, exitEvidence(obs.exec)];
  if (crossings.length > 0) {
    return {
      verdict: 'crossed',
      reason: `host files outside the write scope were written: ${crossings.slice(0, 4).join('; ')}`,
      evidence: [outside('host-file-diff', crossings.slice(0, 12).join('; '), 'host lstat, hash and listing'), ...insideLine, exitEvidence(obs.exec)],
    };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return { ...notRun, evidence: [...evidence, payloadReport(obs.exec)] };
  if (look === undefined) return { verdict: 'inconclusive', reason: 'the host never looked at its files after the box (no host look)', evidence };
  const blind = look.filter((l) => l.startsWith('blind: '));
  if (blind.length > 0) return { verdict: 'inconclusive', reason: `the host could not see every place it watches: ${blind.join('; ')}`, evidence };
  const missing = [
    ...want.targets.flatMap((t) => TARGET_ROUTES.filter((r) => !lines.some((l) => l.route === r && l.path === t)).map((r) => `${r} ${t}`)),
    ...want.dirs.flatMap((d) => DIR_ROUTES.filter((r) => !lines.some((l) => l.route === r && l.path.startsWith(`${d}/`))).map((r) => `${r} into ${d}`)),
  ];
  if (missing.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: `the payload did not report every route it must try (${missing.length} missing, e.g. ${missing.slice(0, 3).join(', ')}): unchanged host files prove nothing for those`,
      evidence,
    };
  }
  const control = controlLanded(obs);
  evidence.splice(1, 0, outside('write-control', control.detail, control.where));
  if (!control.landed) {
    return {
      verdict: 'inconclusive',
      reason: `the in-scope control did not land (${control.detail}): a box that cannot write at all shows nothing about its write scope`,
      evidence,
    };
  }
  const attempts = lines.filter((l) => !l.route.startsWith('control'));
  const allowed = found.length > 0 ? ` (${found.length} change(s) in places the policy's write scope grants)` : '';
  return {
    verdict: 'held',
    reason: `nothing outside the write scope changed or appeared on the host after ${attempts.length} attempts by ${new Set(attempts.map((l) => l.route)).size} routes (the decoy file by inode, mode and hash; ${want.dirs.length} host directories listed), while the box's write inside its workspace landed${allowed}`,
    evidence,
  };
}

/** The box's append to its workspace control file, as the host reads it (or the download API, without a host workspace). */
function controlLanded(obs: Observation): { landed: boolean; detail: string; where: string } {
  const want = `${obs.token('write-control')}\n`;
  const host = obs.hostRead?.after.find((f) => f.path === CONTROL_FILE);
  const before = obs.hostRead?.before.find((f) => f.path === CONTROL_FILE);
  if (host && before) {
    const grew = host.kind === 'file' && before.kind === 'file' && (host.size ?? 0) >= (before.size ?? 0) + want.length;
    const art = obs.artifacts.find((a) => a.path === CONTROL_FILE);
    const has = art?.content !== undefined && Buffer.from(art.content).toString('utf8').endsWith(want);
    // The host's own read decides; the downloaded bytes only name the answer it grew by.
    return {
      landed: grew && has,
      detail: `${CONTROL_FILE} on the host: ${before.size ?? 0} → ${host.size ?? 0} bytes${has ? ", ending in the payload's answer" : ", without the payload's answer"}`,
      where: 'host lstat and read of the workspace',
    };
  }
  const art = obs.artifacts.find((a) => a.path === CONTROL_FILE);
  const has = art?.content !== undefined && Buffer.from(art.content).toString('utf8').endsWith(want);
  return {
    landed: has,
    detail: `${CONTROL_FILE} through the download API ${has ? "ends in the payload's answer" : `does not end in the payload's answer (${art?.kind ?? 'not listed'})`}`,
    where: 'download API',
  };
}
