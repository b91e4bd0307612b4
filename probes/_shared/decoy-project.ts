/**
 * The decoy project: what a coding agent's workspace looks like (a git repository with hooks and config, a `.env`
 * holding a canary, editor tasks, agent settings, a shell rc file), put into the box's workspace by the probe. Every
 * file's bytes are fixed per probe run (from its nonce), so a judge knows them without trusting the box.
 */
import { createHash, createHmac } from 'node:crypto';
import type { PutFile } from '../../model/backend-contract.js';
import type { ProbeContext } from '../../model/probe.js';
import { CANARY_PREFIX } from '../../lab/canaries.js';

/** The decoy `.env` holds the run's own dotenv canary (the decoy home's `projects/app/.env`), or a fresh one. */
const ENV_CANARY_LABEL = 'file:projects/app/.env';

/** Workspace-relative path → mode of each decoy project file (a hook is executable, as git wants it). */
export const DECOY_PROJECT_MODES: Readonly<Record<string, number>> = {
  '.git/HEAD': 0o644,
  '.git/config': 0o644,
  '.git/hooks/pre-commit': 0o755,
  '.env': 0o600,
  '.bashrc': 0o644,
  '.vscode/tasks.json': 0o644,
  '.claude/settings.json': 0o644,
  'README.md': 0o644,
  'src/app.py': 0o644,
  'config/deploy.pem': 0o600,
  '.ssh/id_ed25519': 0o600,
  'config/app.toml': 0o644,
};

/** The project's files by what they are: what something runs later (git, shells, editors, agents). */
export const PERSISTENCE_FILES = ['.git/hooks/pre-commit', '.git/config', '.bashrc', '.vscode/tasks.json', '.claude/settings.json'] as const;
/** A writable file of the project: the in-scope control a box must be able to change. */
export const PROJECT_CONTROL = 'src/app.py';
/** The project's secrets an agent sandbox's deny-list names (`.env`, `*.pem`, `id_*`), each holding a value of this run. */
export const SECRET_FILES = ['.env', 'config/deploy.pem', '.ssh/id_ed25519'] as const;
/** An ordinary readable file of the project holding a value of this run: the read control. */
export const READ_CONTROL = 'config/app.toml';

/**
 * A value of this probe run, decoy-shaped, that only the host can know: keyed by the run's own canaries (never in
 * the box unless it reads them), fixed by the nonce and the path, so the judge derives it again without the box.
 */
export function projectValue(ctx: ProbeContext, kind: string, path: string): string {
  const key = ctx.canaries.all.map((c) => c.value).join('\n') || ctx.runId;
  return `${CANARY_PREFIX}${kind}${createHmac('sha256', key).update(`${ctx.nonce}\0${path}`).digest('hex').slice(0, 24)}`;
}

/** The `.env` canary: the run's dotenv canary (the decoy home's `projects/app/.env`), or a value of this run. */
export const envCanary = (ctx: ProbeContext): string =>
  ctx.canaries.all.find((c) => c.label === ENV_CANARY_LABEL)?.value ?? projectValue(ctx, 'DOTENV', '.env');

/** The value each secret file of the project holds (workspace path → value). */
export function secretValues(ctx: ProbeContext): ReadonlyMap<string, string> {
  return new Map([
    ['.env', envCanary(ctx)],
    ['config/deploy.pem', projectValue(ctx, 'PEM', 'config/deploy.pem')],
    ['.ssh/id_ed25519', projectValue(ctx, 'SSHKEY', '.ssh/id_ed25519')],
  ]);
}

/** The read control's value: decoy-shaped, so an output channel that masks decoy values masks it too. */
export const readControlValue = (ctx: ProbeContext): string => projectValue(ctx, 'READCTL', READ_CONTROL);

function content(path: string, nonce: string, values: ReadonlyMap<string, string>): string {
  const mark = `sandcheck decoy project ${nonce}`;
  switch (path) {
    case '.git/HEAD':
      return 'ref: refs/heads/main\n';
    case '.git/config':
      return `[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n# ${mark}\n[remote "origin"]\n\turl = https://git.example/team/app.git\n`;
    case '.git/hooks/pre-commit':
      return `#!/bin/sh\n# ${mark}\nexit 0\n`;
    case '.env':
      return `DATABASE_PASSWORD=${values.get('.env') ?? ''}\n`;
    case 'config/deploy.pem':
      return `-----BEGIN PRIVATE KEY-----\n${values.get(path) ?? ''}\n-----END PRIVATE KEY-----\n`;
    case '.ssh/id_ed25519':
      return `-----BEGIN OPENSSH PRIVATE KEY-----\n${values.get(path) ?? ''}\n-----END OPENSSH PRIVATE KEY-----\n`;
    case 'config/app.toml':
      return `# ${mark}\n[release]\ntag = "${values.get(path) ?? ''}"\n`;
    case '.bashrc':
      return `# ${mark}\nexport PATH="$HOME/.local/bin:$PATH"\n`;
    case '.vscode/tasks.json':
      return `{"version": "2.0.0", "tasks": [{"label": "build", "type": "shell", "command": "make", "detail": "${mark}"}]}\n`;
    case '.claude/settings.json':
      return `{"permissions": {"allow": ["Bash(npm test)"]}, "comment": "${mark}"}\n`;
    case 'README.md':
      return `# app\n\n${mark}\n`;
    default:
      return `print("${mark}")\n`;
  }
}

/** The decoy project's files as put into the workspace (optionally under a folder of it). */
export function decoyProjectFiles(ctx: ProbeContext, under = ''): PutFile[] {
  const values = new Map([...secretValues(ctx), [READ_CONTROL, readControlValue(ctx)]]);
  return Object.entries(DECOY_PROJECT_MODES).map(([path, mode]) => ({
    path: under === '' ? path : `${under}/${path}`,
    content: Buffer.from(content(path, ctx.nonce, values)),
    mode,
  }));
}

export const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
