import type { ProbeContext, SecurityProbe } from '../../model/probe.js';
import { DEFAULT_PROTECTED_PATHS } from '../../model/protected-paths.js';
import { DECOY_PROJECT_MODES, PROJECT_CONTROL, decoyProjectFiles, sha256Hex } from '../_shared/decoy-project.js';
import { judgeProtectedPaths, type ProtectedPlan } from './judge.js';

const protectedOf = (ctx: ProbeContext): readonly string[] =>
  ctx.policy.files.protected && ctx.policy.files.protected.length > 0 ? ctx.policy.files.protected : DEFAULT_PROTECTED_PATHS;
const under = (p: string, root: string): boolean => p === root || p.startsWith(`${root}/`);

/** What the policy protects, in terms of the decoy project: its files there, and what must not appear (a new hook). */
export function protectedPlan(ctx: ProbeContext): ProtectedPlan {
  const put = decoyProjectFiles(ctx);
  const roots = protectedOf(ctx);
  const files = new Map(
    put.filter((f) => roots.some((r) => under(f.path, r))).map((f) => [f.path, { sha256: sha256Hex(f.content), mode: f.mode ?? 0o644 }] as const),
  );
  const newFiles = roots.flatMap((r) => {
    if (files.has(r)) return [];
    // A protected directory of the project gets a new entry tried in it (a hook git would run); a protected path the project lacks is created.
    return Object.keys(DECOY_PROJECT_MODES).some((p) => under(p, r) && p !== r) ? [`${r}/${r.endsWith('hooks') ? 'post-checkout' : 'sc-planted'}`] : [r];
  });
  return { files, newFiles, control: PROJECT_CONTROL };
}

const watched = (ctx: ProbeContext): string[] => {
  const plan = protectedPlan(ctx);
  return [...plan.files.keys(), ...plan.newFiles, plan.control];
};

export const writeProtectedPath: SecurityProbe = {
  kind: 'security',
  id: 'write-protected-path',
  title:
    'write the protected paths inside the writable workspace (git hooks and config, shell rc, editor tasks, agent settings): append, chmod, replace, unlink and recreate, move the parent aside, add a hook',
  category: 'files',
  policyItem: 'files.protected',
  severity: 'high',
  payload: 'write-protected-path',
  remediation:
    'Bind each protected path read-only over itself after the workspace bind, and its parent directories over themselves so none can be moved aside; protect directories such as .git/hooks whole, so nothing new appears in them.',
  attack: ['T1546.004', 'T1574'],
  cwe: ['CWE-732', 'CWE-276'],
  load: 'wait',
  files: (ctx) => decoyProjectFiles(ctx),
  args: (ctx) => {
    const plan = protectedPlan(ctx);
    return { files: [...plan.files.keys()], newFiles: plan.newFiles, control: plan.control };
  },
  artifacts: watched,
  // The harness reads these itself (a static list: what the default protected paths make of the decoy project); a
  // policy's other paths are judged through the download API.
  hostRead: [...Object.keys(DECOY_PROJECT_MODES), '.git/hooks/post-checkout'],
  judge: (obs, ctx) => judgeProtectedPaths(obs, protectedPlan(ctx)),
};
