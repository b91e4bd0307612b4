import { randomBytes } from 'node:crypto';
import { chmod, mkdir, writeFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export { CANARY_PREFIX, DECOY_MARKER_WINDOW, type Canary, type CanarySet } from '../model/canary.js';
import { CANARY_PREFIX, type Canary, type CanarySet } from '../model/canary.js';

function canary(kind: string): string {
  return `${CANARY_PREFIX}${kind}${randomBytes(12).toString('hex')}`;
}

/** A fresh canary value of a kind (decoy sockets, keyrings). */
export const newCanary = canary;

/** Fresh random decoy credentials for one run. */
export function makeCanaries(): CanarySet {
  const accessKey = canary('AKIA');
  const secretKey = canary('SECRET');
  const controlToken = canary('CTRL');
  const env = {
    AWS_ACCESS_KEY_ID: accessKey,
    AWS_SECRET_ACCESS_KEY: secretKey,
    SANDCHECK_CONTROL_PLANE_TOKEN: controlToken,
  };
  // Where real secrets sit in a home directory, at several depths; one value per file is enough to witness it.
  const values = {
    fileAccessKey: canary('AKIAF'),
    fileSecret: canary('FSECRET'),
    sshKey: canary('SSH'),
    fileToken: canary('FTOKEN'),
    gcloud: canary('GCLOUD'),
    docker: canary('DOCKERAUTH'),
    gitCred: canary('GITCRED'),
    dotenv: canary('DOTENV'),
  };
  const files: Record<string, string> = {
    '.aws/credentials': `[default]\naws_access_key_id = ${values.fileAccessKey}\naws_secret_access_key = ${values.fileSecret}\n`,
    '.ssh/id_ed25519': `-----BEGIN OPENSSH PRIVATE KEY-----\n${values.sshKey}\n-----END OPENSSH PRIVATE KEY-----\n`,
    'control-plane/token': `${values.fileToken}\n`,
    '.config/gcloud/application_default_credentials.json': `{"client_secret": "${values.gcloud}", "type": "authorized_user"}\n`,
    '.docker/config.json': `{"auths": {"registry.example": {"auth": "${values.docker}"}}}\n`,
    '.git-credentials': `https://ci:${values.gitCred}@git.example\n`,
    'projects/app/.env': `DATABASE_PASSWORD=${values.dotenv}\n`,
  };
  const label = (path: string): string => `file:${path}`;
  const all: Canary[] = [
    ...Object.entries(env).map(([k, value]) => ({ label: `env:${k}`, value })),
    { label: label('.aws/credentials'), value: values.fileAccessKey },
    { label: label('.aws/credentials'), value: values.fileSecret },
    { label: label('.ssh/id_ed25519'), value: values.sshKey },
    { label: label('control-plane/token'), value: values.fileToken },
    { label: label('.config/gcloud/application_default_credentials.json'), value: values.gcloud },
    { label: label('.docker/config.json'), value: values.docker },
    { label: label('.git-credentials'), value: values.gitCred },
    { label: label('projects/app/.env'), value: values.dotenv },
  ];
  // The private key keeps the mode ssh insists on; the rest are loose, like the real ones a box with another uid reads.
  return { env, files, modes: { '.ssh/id_ed25519': 0o600 }, all };
}

/**
 * Writes the decoy files under `dir` (a home-like host directory no sandbox should expose): directories
 * 0755 and files at their (mostly loose) modes, so any box that reaches the place can read them, whatever
 * its uid. The caller's scratch directory above stays 0700.
 */
export async function plantDecoyFiles(dir: string, canaries: CanarySet): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  for (const [rel, content] of Object.entries(canaries.files)) {
    const abs = join(dir, rel);
    await mkdir(dirname(abs), { recursive: true, mode: 0o755 });
    const mode = canaries.modes[rel] ?? 0o644;
    await writeFile(abs, content, { mode });
    await chmod(abs, mode); // writeFile's mode is filtered by the umask
  }
  // mkdir's mode is filtered by the umask too: every directory of the tree gets its 0755.
  for (const rel of Object.keys(canaries.files)) {
    for (let d = dirname(rel); d !== '.' && d !== '/'; d = dirname(d)) await chmod(join(dir, d), 0o755);
  }
}

export async function removeDecoyFiles(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export function labelOf(canaries: CanarySet, value: string): string {
  return canaries.all.find((c) => c.value === value)?.label ?? 'unknown canary';
}
