import { randomBytes } from 'node:crypto';
import { mkdir, writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Every canary carries this prefix so a payload can pick decoy values out of an environment
 * without ever copying a real secret of the machine into a report.
 */
export const CANARY_PREFIX = 'SCNRY';

export interface Canary {
  /** Where it was planted, e.g. env:AWS_SECRET_ACCESS_KEY or file:.aws/credentials. */
  label: string;
  value: string;
}

export interface CanarySet {
  env: Record<string, string>;
  /** Relative path inside the decoy directory → file content. */
  files: Record<string, string>;
  all: Canary[];
}

function canary(kind: string): string {
  return `${CANARY_PREFIX}${kind}${randomBytes(12).toString('hex')}`;
}

/** Fresh random decoy credentials for one run. */
export function makeCanaries(): CanarySet {
  const accessKey = canary('AKIA');
  const secretKey = canary('SECRET');
  const controlToken = canary('CTRL');
  const fileAccessKey = canary('AKIAF');
  const fileSecret = canary('FSECRET');
  const sshKey = canary('SSH');
  const fileToken = canary('FTOKEN');
  const env = {
    AWS_ACCESS_KEY_ID: accessKey,
    AWS_SECRET_ACCESS_KEY: secretKey,
    SANDCHECK_CONTROL_PLANE_TOKEN: controlToken,
  };
  const files = {
    '.aws/credentials': `[default]\naws_access_key_id = ${fileAccessKey}\naws_secret_access_key = ${fileSecret}\n`,
    '.ssh/id_ed25519': `-----BEGIN OPENSSH PRIVATE KEY-----\n${sshKey}\n-----END OPENSSH PRIVATE KEY-----\n`,
    'control-plane/token': `${fileToken}\n`,
  };
  const all: Canary[] = [
    ...Object.entries(env).map(([k, value]) => ({ label: `env:${k}`, value })),
    { label: 'file:.aws/credentials', value: fileAccessKey },
    { label: 'file:.aws/credentials', value: fileSecret },
    { label: 'file:.ssh/id_ed25519', value: sshKey },
    { label: 'file:control-plane/token', value: fileToken },
  ];
  return { env, files, all };
}

/** Writes the decoy files under `dir` (a host directory no sandbox should expose). */
export async function plantDecoyFiles(dir: string, canaries: CanarySet): Promise<void> {
  for (const [rel, content] of Object.entries(canaries.files)) {
    const abs = join(dir, rel);
    await mkdir(join(abs, '..'), { recursive: true, mode: 0o700 });
    await writeFile(abs, content, { mode: 0o600 });
  }
}

export async function removeDecoyFiles(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export function labelOf(canaries: CanarySet, value: string): string {
  return canaries.all.find((c) => c.value === value)?.label ?? 'unknown canary';
}
