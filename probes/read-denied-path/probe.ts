import type { PutFile } from '../../model/backend-contract.js';
import { DEFAULT_DENY_READ, deniedToRead } from '../../model/deny-read.js';
import type { ProbeContext, SecurityProbe } from '../../model/probe.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { READ_CONTROL, SECRET_FILES, decoyProjectFiles, projectValue, readControlValue, secretValues } from '../_shared/decoy-project.js';
import { judgeDeniedReads, type DenyPlan } from './judge.js';

/** The run canary the decoy `.env` holds (lab/canaries.ts). */
const ENV_LABEL = 'file:projects/app/.env';
/** A second readable control, planted when the policy denies the project's own. */
const FALLBACK_CONTROL = 'sc-read-control.txt';

const denyListOf = (ctx: ProbeContext): readonly string[] =>
  ctx.policy.files.denyRead && ctx.policy.files.denyRead.length > 0 ? ctx.policy.files.denyRead : DEFAULT_DENY_READ;

/** A path a glob matches, for a glob none of the project's files matches (`*` and `**` → sc, `?` → x). */
const exampleOf = (glob: string): string =>
  glob
    .split('/')
    .map((c) => (c === '**' ? 'sc' : c.replace(/\*/g, 'sc').replace(/\?/g, 'x')))
    .join('/');

interface Extra {
  path: string;
  value: string;
}

/** What the policy denies in terms of the decoy project: its secret files matched, and one planted file per glob that matches none of them. */
export function denyPlan(ctx: ProbeContext): DenyPlan & { extra: Extra[] } {
  const globs = denyListOf(ctx);
  const secrets = secretValues(ctx);
  const denied = new Map<string, string>(SECRET_FILES.filter((p) => deniedToRead(globs, p)).map((p) => [p, secrets.get(p) ?? ''] as const));
  const extra: Extra[] = [];
  for (const g of globs) {
    if (SECRET_FILES.some((p) => deniedToRead([g], p))) continue;
    const path = exampleOf(g);
    if (denied.has(path) || !deniedToRead([g], path)) continue;
    const value = projectValue(ctx, 'DENY', path);
    denied.set(path, value);
    extra.push({ path, value });
  }
  const value = readControlValue(ctx);
  const controlPath = [READ_CONTROL, FALLBACK_CONTROL].find((p) => !deniedToRead(globs, p));
  return {
    denied,
    extra,
    ...(controlPath ? { control: { path: controlPath, value } } : {}),
    runCanaryLabels: denied.has('.env') && ctx.canaries.all.some((c) => c.label === ENV_LABEL) ? [ENV_LABEL] : [],
  };
}

function files(ctx: ProbeContext): PutFile[] {
  const plan = denyPlan(ctx);
  const own = plan.extra.map((e) => ({ path: e.path, content: Buffer.from(`secret = ${e.value}\n`), mode: 0o600 }));
  const control = plan.control?.path === FALLBACK_CONTROL ? [{ path: FALLBACK_CONTROL, content: Buffer.from(`tag = ${plan.control.value}\n`) }] : [];
  return [...decoyProjectFiles(ctx), ...own, ...control];
}

export const readDeniedPath: SecurityProbe = {
  kind: 'security',
  id: 'read-denied-path',
  title:
    'read the deny-listed files inside the readable workspace (.env, *.pem, id_*): direct, through a planted symlink and hardlink, /proc/self/root, openat from the parent directory, cat in a subprocess',
  category: 'files',
  policyItem: 'files.denyRead',
  severity: 'high',
  payload: 'read-denied-path',
  remediation:
    'Hide each deny-listed file after the workspace bind (bind /dev/null over a file, an empty read-only tmpfs over a directory), in the box mount namespace, so that no other path (a link, /proc/self/root, a directory fd) leads to the original.',
  attack: ['T1552.001', 'T1083'],
  cwe: ['CWE-552', 'CWE-200'],
  load: 'wait',
  files,
  args: (ctx) => {
    const plan = denyPlan(ctx);
    return { files: [...plan.denied.keys()], control: plan.control?.path ?? '', canaryPrefix: CANARY_PREFIX };
  },
  judge: (obs, ctx) => judgeDeniedReads(obs, denyPlan(ctx)),
};
