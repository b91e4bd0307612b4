/**
 * write-protected-path, judged on the host: each protected file of the decoy project read by the harness before and
 * after the exec (lstat: kind, device, inode, mode; sha256 of the bytes), each new path checked absent after.
 *
 * crossed: a protected file changed (bytes, inode, mode, kind or gone) or a new path appeared under a protected one.
 * held: the payload ran and finished, reported every route on every path, the host's before-read was the file put
 * (so its after-read binds the box's workspace), and the control (an ordinary workspace file) grew by the payload's
 * answer on the host: the box could write its workspace, and the protection, not a read-only workspace, held.
 * Without a host workspace, the download API's bytes stand in (bytes only) and the control must show there.
 */
import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { inside, outside, type Evidence } from '../../model/evidence.js';
import type { HostFileState } from '../../model/host-file.js';
import type { Judgement, Observation } from '../../model/probe.js';
import { sha256Hex } from '../_shared/decoy-project.js';
import { signedJsonLines } from '../_shared/escapes.js';

export const WPP_MARKER = 'SANDCHECK-WPP';
export const WPP_LINE_KIND = 'wpp-line';
/** The routes tried on every existing protected file (parent-rename only where it has a parent in the workspace). */
export const FILE_ROUTES = ['append', 'chmod', 'replace', 'unlink-recreate', 'parent-rename'] as const;

export interface ProtectedPlan {
  /** Protected files as put: path → sha256 and mode. */
  files: ReadonlyMap<string, { sha256: string; mode: number }>;
  /** Paths under protected ones that must not appear. */
  newFiles: readonly string[];
  control: string;
}

interface RouteLine {
  route: string;
  path: string;
  outcome: string;
}

function routeLines(obs: Observation): RouteLine[] {
  return signedJsonLines(obs, WPP_MARKER, WPP_LINE_KIND, 256).flatMap((v) => {
    if (typeof v !== 'object' || v === null) return [];
    const { route, path, outcome } = v as Record<string, unknown>;
    return typeof route === 'string' && typeof path === 'string' && typeof outcome === 'string' ? [{ route, path, outcome }] : [];
  });
}

const routesFor = (path: string): readonly string[] => (path.includes('/') ? FILE_ROUTES : FILE_ROUTES.filter((r) => r !== 'parent-rename'));
const oct = (m: number | undefined): string => (m === undefined ? '?' : m.toString(8));

function hostChanges(plan: ProtectedPlan, read: NonNullable<Observation['hostRead']>): { changed: string[]; bound: boolean; seen: string[] } {
  const changed: string[] = [];
  const seen: string[] = [];
  let bound = true;
  const at = (list: readonly HostFileState[], p: string) => list.find((f) => f.path === p);
  for (const [path, put] of plan.files) {
    const b = at(read.before, path);
    const a = at(read.after, path);
    if (b?.kind !== 'file' || b.sha256 !== put.sha256 || b.mode !== put.mode) {
      bound = false;
      continue;
    }
    if (!a || a.kind === 'missing') changed.push(`${path}: gone on the host`);
    else if (a.kind !== 'file') changed.push(`${path}: ${a.note ?? 'not a regular file'} on the host`);
    else {
      const diff = [
        a.sha256 !== b.sha256 ? `bytes (${b.size ?? '?'} → ${a.size ?? '?'} bytes)` : '',
        a.ino !== b.ino || a.dev !== b.dev ? `inode ${b.ino ?? '?'} → ${a.ino ?? '?'}` : '',
        a.mode !== b.mode ? `mode ${oct(b.mode)} → ${oct(a.mode)}` : '',
      ].filter(Boolean);
      if (diff.length > 0) changed.push(`${path}: ${diff.join(', ')}`);
      else seen.push(`${path} (ino ${a.ino ?? '?'} mode ${oct(a.mode)})`);
    }
  }
  for (const path of plan.newFiles) {
    const b = at(read.before, path);
    const a = at(read.after, path);
    if (b?.kind !== 'missing') bound = false;
    else if (a && a.kind !== 'missing') changed.push(`${path}: appeared on the host (${a.kind}${a.size !== undefined ? `, ${a.size} bytes` : ''})`);
    else seen.push(`${path} absent`);
  }
  return { changed, bound, seen };
}

function downloadChanges(plan: ProtectedPlan, obs: Observation): { changed: string[]; seen: string[] } {
  const changed: string[] = [];
  const seen: string[] = [];
  for (const [path, put] of plan.files) {
    const got = obs.artifacts.find((a) => a.path === path);
    if (!got || got.kind === 'missing') changed.push(`${path}: gone`);
    else if (got.kind !== 'file') changed.push(`${path}: now a ${got.kind}`);
    else if (!got.content) changed.push(`${path}: not readable after the exec (${got.note ?? `size ${got.size}`})`);
    else if (sha256Hex(got.content) !== put.sha256) changed.push(`${path}: bytes changed (${got.size} bytes)`);
    else seen.push(path);
  }
  for (const path of plan.newFiles) {
    const got = obs.artifacts.find((a) => a.path === path);
    if (got && got.kind !== 'missing') changed.push(`${path}: appeared (${got.kind})`);
    else seen.push(`${path} absent`);
  }
  return { changed, seen };
}

function controlLanded(obs: Observation, control: string): { landed: boolean; detail: string; where: string } {
  const want = `${obs.token('write-control')}\n`;
  const art = obs.artifacts.find((a) => a.path === control);
  const has = art?.content !== undefined && Buffer.from(art.content).toString('utf8').endsWith(want);
  const b = obs.hostRead?.before.find((f) => f.path === control);
  const a = obs.hostRead?.after.find((f) => f.path === control);
  if (a && b) {
    const grew = a.kind === 'file' && b.kind === 'file' && (a.size ?? 0) >= (b.size ?? 0) + want.length;
    return {
      landed: grew && has,
      detail: `${control} on the host: ${b.size ?? 0} → ${a.size ?? 0} bytes${has ? ", ending in the payload's answer" : ", without the payload's answer"}`,
      where: 'host lstat and read of the workspace',
    };
  }
  return {
    landed: has,
    detail: `${control} through the download API ${has ? "ends in the payload's answer" : "does not end in the payload's answer"}`,
    where: 'download API',
  };
}

export function judgeProtectedPaths(obs: Observation, plan: ProtectedPlan): Judgement {
  const lines = routeLines(obs);
  const ok = lines.filter((l) => l.outcome === 'ok' && l.route !== 'control');
  const insideLine: Evidence[] =
    lines.length > 0
      ? [
          inside(
            'payload-lines',
            `${lines.length} attempts; the box says these succeeded: ${
              ok
                .slice(0, 8)
                .map((l) => `${l.route} ${l.path}`)
                .join('; ') || 'none'
            }`,
            'stdout',
          ),
        ]
      : [];
  const host = obs.hostRead ? hostChanges(plan, obs.hostRead) : undefined;
  const useHost = host?.bound === true;
  const found = useHost ? host : downloadChanges(plan, obs);
  const where = useHost ? 'host lstat and read of the workspace' : 'download API';
  const diffLine = outside(
    'host-file-diff',
    found.changed.length > 0
      ? `changed: ${found.changed.join('; ')}`
      : `unchanged: ${found.seen.join(', ')}${host && !host.bound ? " (the host workspace did not hold the files as put: the download API's bytes stand in)" : ''}`,
    where,
  );
  const evidence = [diffLine, ...insideLine, exitEvidence(obs.exec)];
  if (found.changed.length > 0) {
    return { verdict: 'crossed', reason: `protected paths inside the workspace were written: ${found.changed.slice(0, 4).join('; ')}`, evidence };
  }
  const notRun = unlessAttempted(obs, true);
  if (notRun) return { ...notRun, evidence: [...evidence, payloadReport(obs.exec)] };
  const missing = [...plan.files.keys()].flatMap((p) =>
    routesFor(p)
      .filter((r) => !lines.some((l) => l.route === r && l.path === p))
      .map((r) => `${r} ${p}`),
  );
  missing.push(...plan.newFiles.filter((p) => !lines.some((l) => l.route === 'create' && l.path === p)).map((p) => `create ${p}`));
  if (missing.length > 0) {
    return {
      verdict: 'inconclusive',
      reason: `the payload did not report every route it must try (${missing.length} missing, e.g. ${missing.slice(0, 3).join(', ')}): unchanged files prove nothing for those`,
      evidence,
    };
  }
  const control = controlLanded(obs, plan.control);
  evidence.splice(1, 0, outside('write-control', control.detail, control.where));
  if (!control.landed) {
    return {
      verdict: 'inconclusive',
      reason: `the control write to an ordinary workspace file did not land (${control.detail}): a box that cannot write its workspace shows nothing about protected paths in it`,
      evidence,
    };
  }
  return {
    verdict: 'held',
    reason: `every protected path (${plan.files.size} files, ${plan.newFiles.length} new path(s)) unchanged by ${lines.length - 1} attempts (${useHost ? 'bytes, inode and mode read on the host' : 'bytes through the download API'}), while the box's write to an ordinary workspace file landed`,
    evidence,
  };
}
